"""Each symbol's unscaled inputs computed into the streamed store's scratch matrix
(streamed.py), in this process or in `DataConfig.prepare_workers` processes at once.

A symbol's job names its validated rows (a scratch file of streamed_bars.py), its rows of
the matrix and what the features need; the worker writes its rows of the scratch file at
their place and returns the symbol's returns and its inputs' training ranges, which the
caller joins in symbol order (fmin / fmax: any order gives the same numbers). Each symbol's
numbers are computed alone whatever the process, so the store is the same for any number of
workers (tests/data/test_streamed.py). Workers are spawned, not forked: a fork of a process
whose torch or OpenMP threads were started may hang.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from foxhunt.data.config import DataConfig
from foxhunt.data.features import FeatureSpec
from foxhunt.data.features.bars import OtherSymbols
from foxhunt.data.features.base import log_returns
from foxhunt.data.features.compute import library_blocks, make_bars
from foxhunt.data.features.cross import own_measures
from foxhunt.data.features.fitting import train_ranges
from foxhunt.data.new_run import row_splits

if TYPE_CHECKING:
    from foxhunt.data.streamed_bars import SymbolBars

BLOCK_ROWS = 1 << 16  # rows written to the scratch file at a time


@dataclass(frozen=True)
class SymbolJob:
    bars: Path  # the symbol's validated rows (pickled)
    vectors: Path  # its [n] vectors (streamed_bars.SymbolRows; series codes from 0)
    first: int  # its rows of the matrix: [first, first + n)
    config: DataConfig  # with `cuts`, which rows train
    cuts: np.ndarray
    spec: FeatureSpec
    timezone: str
    scratch: Path  # the [N, width] float32 scratch matrix
    width: int
    others: OtherSymbols | None = None  # the other symbols' files, for the cross group


@dataclass(frozen=True)
class SymbolInputs:
    first: int
    returns: np.ndarray  # [n]
    low: np.ndarray  # [width] training minimum of each input (inf: none finite)
    high: np.ndarray
    pid: int  # the process that computed it


def compute_symbol(job: SymbolJob) -> SymbolInputs:
    """`job`'s symbol's features, its rows of the scratch matrix written a block of rows at a
    time (features/blocks.py: a long symbol's matrix is never held whole)."""
    frame: pd.DataFrame = pd.read_pickle(job.bars)
    frame.index = pd.RangeIndex(job.first, job.first + len(frame))
    with np.load(job.vectors) as saved:
        series, times_ns = saved["series"], saved["times_ns"]
    returns = log_returns(frame["close"].to_numpy(np.float64), series)
    train = row_splits(times_ns, job.config, job.cuts)[1] == 0
    low, high = np.full(job.width, np.inf), np.full(job.width, -np.inf)
    row_bytes = job.width * np.dtype(np.float32).itemsize
    blocks = library_blocks(frame, job.spec, job.timezone, series, returns, job.others)
    with open(job.scratch, "r+b") as file:
        for start, stop, rows in blocks:
            if rows.shape[1] != job.width:
                raise ValueError(f"{rows.shape[1]} inputs for a scratch of {job.width}")
            for lo in range(0, len(rows), BLOCK_ROWS):
                file.seek((job.first + start + lo) * row_bytes)
                file.write(np.ascontiguousarray(rows[lo : lo + BLOCK_ROWS]).data)
            least, most = train_ranges(rows, train[start:stop])
            low, high = np.fmin(low, least), np.fmax(high, most)
    return SymbolInputs(job.first, returns, low, high, os.getpid())


def cross_files(bars: SymbolBars, folder: Path) -> OtherSymbols | None:
    """With the cross group: each symbol's own measures at its windows (its w-bar return and
    realized volatility, cross.own_measures) in a file of `folder`, which the jobs of the
    other symbols read one at a time (None without the group). A symbol's measures are
    computed from its rows alone, within each series, as in the whole frame."""
    windows = next((w for group, w in bars.spec.observed_groups if group.cross), None)
    if windows is None:
        return None
    files = []
    for code in range(len(bars.ranges)):
        frame, rows = bars.frame(code), bars.rows(code)
        returns = log_returns(frame["close"].to_numpy(np.float64), rows.series)
        measured = make_bars(frame, bars.spec, bars.timezone, rows.series, returns)
        files.append(folder / f"cross-{code}.npz")
        np.savez(files[-1], times_ns=rows.times_ns, own=own_measures(measured, windows))
    names = [str(name) for name in bars.symbols.categories]
    order = sorted(range(len(names)), key=names.__getitem__)  # the in-memory sum's order
    return OtherSymbols(tuple(names[i] for i in order), tuple(files[i] for i in order))


def symbol_inputs(jobs: list[SymbolJob], workers: int) -> Iterator[SymbolInputs]:
    """Each job's `compute_symbol`, in order: here with one worker, else in `workers`
    spawned processes (each holding one symbol's matrix at a time; a job names its files,
    so the jobs waiting hold no vector of their bars)."""
    if workers == 1 or len(jobs) <= 1:  # none: a DDP rank with no symbol (shared_store.py)
        yield from map(compute_symbol, jobs)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=context) as pool:
        yield from pool.map(compute_symbol, jobs)
