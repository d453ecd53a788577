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

import numpy as np
import pandas as pd

from foxhunt.data.config import DataConfig
from foxhunt.data.features import FeatureSpec, compute_features
from foxhunt.data.features.fitting import train_ranges
from foxhunt.data.new_run import row_splits

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


@dataclass(frozen=True)
class SymbolInputs:
    first: int
    returns: np.ndarray  # [n]
    low: np.ndarray  # [width] training minimum of each input (inf: none finite)
    high: np.ndarray
    pid: int  # the process that computed it


def compute_symbol(job: SymbolJob) -> SymbolInputs:
    """`job`'s symbol's features, its rows of the scratch matrix written."""
    frame: pd.DataFrame = pd.read_pickle(job.bars)
    frame.index = pd.RangeIndex(job.first, job.first + len(frame))
    with np.load(job.vectors) as saved:
        series, times_ns = saved["series"], saved["times_ns"]
    part = compute_features(frame, job.spec, timezone=job.timezone, symbol_codes=series)
    del frame
    row_bytes = job.width * np.dtype(np.float32).itemsize
    with open(job.scratch, "r+b") as file:
        for lo in range(0, len(part.inputs), BLOCK_ROWS):
            file.seek((job.first + lo) * row_bytes)
            file.write(np.ascontiguousarray(part.inputs[lo : lo + BLOCK_ROWS]).data)
    train = row_splits(times_ns, job.config, job.cuts)[1] == 0
    low, high = train_ranges(part.inputs, train)
    return SymbolInputs(job.first, part.returns, low, high, os.getpid())


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
