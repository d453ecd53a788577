"""A feature store entry prepared a symbol at a time (issue 41): neither the input matrix
nor any [N] vector of every bar is held. Bit for bit the entry the in-memory preparation
writes (tests/data/test_streamed.py).

1. The bars are read and validated a symbol at a time into scratch files (its rows, and its
   [n] vectors: times, series codes, high and low), and the feature state fitted on each
   symbol's training rows (`streamed_bars.read_new_run`: the numbers of
   `new_run.fit_new_run` on the whole frame, which is never held).
2. Each symbol's features are computed alone (`compute_features` on its rows; every
   feature is causal and kept inside its series, so a symbol alone gives its rows of the
   whole-frame matrix) into a scratch file of the entry, `raw.f32`, unscaled; the
   training range of each input is gathered on the way (inputs constant on it are dropped)
   and its returns and finite rows kept in a scratch file of the symbol.
3. Each symbol's rows are read back in blocks: the scaler's mean and std over its finite
   training rows (`scaling.streamed_moments`: the numbers of `StandardScaler.fit`, summed
   in the same order).
4. The windows and the rest of the preprocessor are fitted a symbol at a time
   (`symbol_plan.py`: `planned.plan_windows`' numbers), each symbol's [n] vectors appended
   to the entry's files as it is done, and the inputs scaled block by block into
   `inputs.npy`.

Memory: one symbol's bars and vectors, and a block of its rows' matrix and the groups'
temporaries (about 1.4 KB a bar at the tft-225 groups; features/blocks.py: a symbol longer
than a block is computed a block at a time from a warm-up prefix, in memory and streamed
alike), so it grows with the longest symbol's vectors (about 300 bytes a bar), not with its
matrix nor with the number of symbols (what is kept of all of them: a few numbers each, and
the distinct times of the bars for the split cuts, 8 bytes a distinct time).

Group "cross" reads the other symbols at each time: before step 2 each symbol's own
measures (its w-bar return and realized volatility, [n, 2 W] float64) are written to a
scratch file, and a symbol's job reads the others' files one at a time, summing them in the
order the whole frame does (symbol_inputs.cross_files). Not streamed (prepared in memory,
with a line saying why): today's inputs without the library (a float64 matrix) and a resumed
run's preprocessor.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from foxhunt.data.config import DataConfig
from foxhunt.data.features import FeatureSpec, parse_groups
from foxhunt.data.features import blocks as feature_blocks
from foxhunt.data.features.blocks import computed_rows
from foxhunt.data.features.fitting import constant_names
from foxhunt.data.fit import resolve_max_gap
from foxhunt.data.footprint import check_symbol_fits
from foxhunt.data.planned import summarize
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.scaling import StandardScaler, streamed_moments
from foxhunt.data.store_entry import entry_metadata, stored_block, write_files
from foxhunt.data.streamed_bars import SymbolBars, read_new_run
from foxhunt.data.symbol_inputs import SymbolInputs, SymbolJob, cross_files, symbol_inputs
from foxhunt.data.symbol_plan import (
    Load,
    SymbolEncoded,
    encoded_symbol,
    index_symbols,
    write_anchors,
    write_symbols,
)
from foxhunt.data.windows import check_windows, warn_short_train
from foxhunt.storage.staged import Staging

log = logging.getLogger("foxhunt.data")

BLOCK_ROWS = 1 << 16  # rows read back from the scratch matrix at a time (60 MB at 229)
SCRATCH = "raw.f32"  # the unscaled inputs, in the staging folder until the entry is written


class Scratch:
    """The unscaled [N, P] float32 inputs in a plain file of the staging folder, written and
    read a block at a time with positioned file calls rather than through a memory map (a
    map's touched pages count in the process's RSS: the whole matrix by the end; a read's
    stay in the page cache). An OSError (disk full) is one line naming the store."""

    def __init__(self, stage: Staging, rows: int, width: int) -> None:
        self.stage, self.rows, self.width = stage, rows, width
        self.row_bytes = width * np.dtype(np.float32).itemsize
        with stage.errors():
            self.file = open(stage.path / SCRATCH, "w+b")  # noqa: SIM115 - closed by close()

    def read(self, lo: int, hi: int, keep: np.ndarray) -> np.ndarray:
        """Rows [lo, hi), the columns `keep` selects."""
        block = np.empty((hi - lo, self.width), np.float32)
        with self.stage.errors():
            self.file.seek(lo * self.row_bytes)
            if self.file.readinto(block.data) != block.nbytes:
                raise OSError(f"{SCRATCH}: short read")
        return block if keep.all() else block[:, keep]

    def close(self) -> None:
        self.file.close()
        (self.stage.path / SCRATCH).unlink()  # not the entry's: the manifest never names it


Ranges = list[tuple[int, int]]
Compute = Callable[[list[SymbolJob], int], Iterator[SymbolInputs]]


def why_not_streamed(config: DataConfig, preprocessor: Preprocessor | None) -> str | None:
    """Why this preparation is made in memory (None: it streams a symbol at a time)."""
    groups = parse_groups(config.feature_groups)
    if preprocessor is not None:
        return "a resumed run's inputs are prepared in memory"
    if not groups:
        return "today's inputs without feature groups are prepared in memory"
    return None


def write_streamed(
    stage: Staging, config: DataConfig, material: dict[str, Any], compute: Compute = symbol_inputs
) -> dict[str, Any]:
    """Prepare `config`'s bars a symbol at a time into `stage`: the files `write_entry`
    writes of the same bars in memory; the manifest's metadata. `compute` computes the
    symbols' jobs (`symbol_inputs`; DDP ranks share them: data/shared_store.py)."""
    spec = FeatureSpec(
        config.volatility_windows,
        config.observed_columns,
        config.known_columns,
        groups=parse_groups(config.feature_groups),
    )
    bars = read_new_run(stage.path, config, spec, config.lookback + config.horizon)
    ranges = bars.ranges
    longest = max(stop - first for first, stop in ranges)
    workers = min(config.prepare_workers, len(ranges))
    computed = max(_computed_rows(bars, code) for code in range(len(ranges)))
    check_symbol_fits(longest, bars.spec, computed=computed, source=bars.source, workers=workers)
    raw = Scratch(stage, ranges[-1][1], len(_all_names(bars.spec)))
    spec, files = _encode(raw, bars, config, compute)
    keep = np.asarray([n not in spec.dropped for n in _all_names(spec)])
    observed = len(spec.observed_names)

    def load(code: int) -> SymbolEncoded:
        with np.load(files[code]) as saved:
            return encoded_symbol(bars, code, saved["returns"], saved["finite"], config, observed)

    names = (*spec.observed_names, *spec.known_names)
    scaler = _fit_scaler(raw, keep, load, ranges, names)
    max_gap = resolve_max_gap(config.max_gap, bars.spacing_ns)
    indexed = index_symbols(stage, bars, load, config, spec, scaler, max_gap)
    ready = write_symbols(stage, bars, load, indexed)
    index, pre = indexed.index, indexed.preprocessor
    check_windows(replace(index, anchors=_sized(ready)), config, bars.source, spec.warmup_bars)
    _write_inputs(stage, raw, keep, pre.scaler, ranges, config.feature_store_dtype)
    raw.close()
    warmup = max(spec.warmup_bars, config.baseline_window)
    warn_short_train(ready["train"], indexed.train_bars, warmup, bars.source)
    rows = ranges[-1][1]
    summary = summarize(bars.source, rows, pre, index, ready, bars.cuts)
    write_anchors(stage, bars, indexed, ready)
    write_files(stage, {}, pre, summary, material)
    for file in files:
        file.unlink()
    bars.close()
    symbols = dict(zip(pre.symbols.categories, map(list, ranges), strict=True))
    times = bars.times(np.zeros(0, np.int64))
    width = len(pre.schema.past_names)
    return entry_metadata(stage, times, symbols, rows=rows, width=width, pre=pre)


def _computed_rows(bars: SymbolBars, code: int) -> int:
    """The most rows of symbol `code` whose features are computed at once (its blocks)."""
    first, stop = bars.ranges[code]
    if stop - first <= feature_blocks.BLOCK_ROWS:  # computed whole: nothing to read
        return stop - first
    with np.load(bars.vectors[code]) as saved:
        series, times_ns = saved["series"], saved["times_ns"]
    spec = bars.spec
    return computed_rows(series, times_ns, spec.session_gap_ns, spec.warmup_bars)


def _sized(counts: dict[str, int]) -> dict[str, np.ndarray]:
    """Anchors of these counts, for `check_windows`, which reads only how many there are."""
    return {split: np.empty(n, np.int64) for split, n in counts.items()}


def _all_names(spec: FeatureSpec) -> tuple[str, ...]:
    """Every input of `spec`'s groups, those it drops too, in the matrix's order."""
    full = replace(spec, dropped=())
    return (*full.observed_names, *full.known_names)


def _blocks(ranges: Ranges) -> Iterator[tuple[int, int]]:
    """[lo, hi) blocks of at most BLOCK_ROWS rows, never across two symbols."""
    for first, stop in ranges:
        for lo in range(first, stop, BLOCK_ROWS):
            yield lo, min(lo + BLOCK_ROWS, stop)


def _encode(
    raw: Scratch, bars: SymbolBars, config: DataConfig, compute: Compute
) -> tuple[FeatureSpec, list[Path]]:
    """Each symbol's unscaled inputs into `raw`, its returns and finite rows into a scratch
    file of its own; the spec less the inputs constant on the training rows, as
    `pipeline._encode_new_run`."""
    spec, ranges = bars.spec, bars.ranges
    width = raw.width
    low, high = np.full(width, np.inf), np.full(width, -np.inf)
    files = [raw.stage.path / f"encoded-{code}.npz" for code in range(len(ranges))]
    others = cross_files(bars, raw.stage.path)

    jobs = [
        SymbolJob(
            bars=bars.files[code],
            vectors=bars.vectors[code],
            first=first,
            config=config,
            cuts=bars.cuts,
            spec=spec,
            timezone=bars.timezone,
            scratch=raw.stage.path / SCRATCH,
            width=width,
            others=others,
        )
        for code, (first, _) in enumerate(ranges)
    ]
    processes = set()
    with raw.stage.errors():  # disk full: one line naming the store, from any worker
        for code, done in enumerate(compute(jobs, config.prepare_workers)):
            np.save(files[code].with_suffix(".npy"), done.returns)
            low, high = np.fmin(low, done.low), np.fmax(high, done.high)
            processes.add(done.pid)
    for file in others.files if others is not None else ():
        file.unlink()  # the manifest never names them
    if config.prepare_workers > 1 and compute is symbol_inputs:  # DDP ranks log their own
        log.info("feature store: %d symbols computed in %d processes", len(ranges), len(processes))
    spec = replace(spec, dropped=constant_names(spec, low, high))
    keep = np.asarray([n not in spec.dropped for n in _all_names(spec)])
    for code, bounds in enumerate(ranges):
        returns = np.load(files[code].with_suffix(".npy"))
        finite = np.isfinite(returns)
        for lo, hi in _blocks([bounds]):
            finite[lo - bounds[0] : hi - bounds[0]] &= np.isfinite(raw.read(lo, hi, keep)).all(1)
        np.savez(files[code], returns=returns, finite=finite)
        files[code].with_suffix(".npy").unlink()
    return spec, files


def _fit_scaler(
    raw: Scratch, keep: np.ndarray, load: Load, ranges: Ranges, names: tuple[str, ...]
) -> StandardScaler:
    """Each symbol's scaler statistics over its finite training rows, read in blocks:
    `StandardScaler.fit`'s numbers."""
    width = int(keep.sum())
    mean, std = np.empty((len(ranges), width)), np.empty((len(ranges), width))
    for code, bounds in enumerate(ranges):
        sym = load(code)
        rows = (sym.splits == 0) & sym.frame.finite

        def blocks(
            bounds: tuple[int, int] = bounds, rows: np.ndarray = rows
        ) -> Iterator[np.ndarray]:
            for lo, hi in _blocks([bounds]):
                yield raw.read(lo, hi, keep)[rows[lo - bounds[0] : hi - bounds[0]]]

        mean[code], std[code] = streamed_moments(blocks, width)
    return StandardScaler.from_moments(names, mean, std)


def _write_inputs(
    stage: Staging,
    raw: Scratch,
    keep: np.ndarray,
    scaler: StandardScaler,
    ranges: Ranges,
    dtype: str,
) -> None:
    """`inputs.npy`: the kept inputs scaled, block by block (`scale_in_place`'s numbers),
    stored as `dtype` (float16: rounded from those float32 values)."""
    shape = (raw.rows, int(keep.sum()))
    with stage.array("inputs.npy", shape, np.dtype(dtype)) as writer:
        for code, bounds in enumerate(ranges):
            for lo, hi in _blocks([bounds]):
                codes = np.full(hi - lo, code, np.int64)
                block = scaler.scale_in_place(raw.read(lo, hi, keep), codes)
                writer.append(stored_block(block, dtype))
