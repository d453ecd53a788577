"""A feature store entry prepared a symbol at a time (issue 41): the input matrix is never
held whole. Bit for bit the entry the in-memory preparation writes (tests/data/test_streamed.py).

1. The bars are read and validated a symbol at a time into scratch files, and the feature
   state fitted on each symbol's training rows (`streamed_bars.read_new_run`: the numbers
   of `new_run.fit_new_run` on the whole frame, which is never held); the [N] vectors
   (times, codes, high and low, returns, the windows' and the base volatility's) stay.
2. Each symbol's features are computed alone (`compute_features` on its rows; every
   feature is causal and kept inside its series, so a symbol alone gives its rows of the
   whole-frame matrix) into a scratch file of the entry, `raw.f32`, unscaled; the
   training range of each input is gathered on the way (inputs constant on it are dropped).
3. Each symbol's rows are read back in blocks twice: the finite rows, then the scaler's
   mean and std over its finite training rows (`scaling.streamed_moments`: the numbers of
   `StandardScaler.fit`, summed in the same order).
4. The windows and the rest of the preprocessor are fitted on the [N] vectors
   (`planned.plan_windows`), and the inputs scaled block by block into `inputs.npy`.

Memory: one symbol's bars, or its matrix and its groups' temporaries (about 1.4 KB a bar at
the tft-225 groups), besides the [N] vectors (about 0.1 KB a bar), so it grows with the
longest symbol and slowly with the data. Row
blocks within a series are not streamed: the groups' rolling sums are differences of one
cumulative sum over the series (`bars.Rolling`), pandas' rolling std and EWMs carry their
running state from the series' first row, so a block started later with only a window of
warm-up rows would round differently; a series is the unit that is exact.

Not streamed (prepared in memory, with a line saying why): group "cross" (it reads every
symbol at each time), today's inputs without the library (a float64 matrix) and a resumed
run's preprocessor.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from foxhunt.data.config import DataConfig
from foxhunt.data.dataset import baseline_tensors
from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.features import Features, FeatureSpec, parse_groups
from foxhunt.data.features.fitting import constant_names
from foxhunt.data.features.registry import GROUPS
from foxhunt.data.fit import resolve_max_gap
from foxhunt.data.footprint import check_symbol_fits
from foxhunt.data.new_run import row_splits
from foxhunt.data.planned import EncodedBars, Planned, plan_windows, summarize
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.scaling import StandardScaler, streamed_moments
from foxhunt.data.store_entry import entry_metadata, stored_block, write_files
from foxhunt.data.streamed_bars import SymbolBars, read_new_run
from foxhunt.data.summary import DataSummary
from foxhunt.data.symbol_inputs import SymbolJob, symbol_inputs
from foxhunt.data.windows import SPLITS, warn_short_train
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


def why_not_streamed(config: DataConfig, preprocessor: Preprocessor | None) -> str | None:
    """Why this preparation is made in memory (None: it streams a symbol at a time)."""
    groups = parse_groups(config.feature_groups)
    if preprocessor is not None:
        return "a resumed run's inputs are prepared in memory"
    if not groups:
        return "today's inputs without feature groups are prepared in memory"
    if any(GROUPS[name].cross for name, _ in groups):
        return "group 'cross' reads every symbol at each time: prepared in memory"
    return None


def write_streamed(stage: Staging, config: DataConfig, material: dict[str, Any]) -> dict[str, Any]:
    """Prepare `config`'s bars a symbol at a time into `stage`: the files `write_entry`
    writes of the same bars in memory; the manifest's metadata."""
    spec = FeatureSpec(
        config.volatility_windows,
        config.observed_columns,
        config.known_columns,
        groups=parse_groups(config.feature_groups),
    )
    bars = read_new_run(stage.path, config, spec, config.lookback + config.horizon)
    source, ranges, cuts = bars.source, bars.ranges, bars.cuts
    longest = max(stop - first for first, stop in ranges)
    workers = min(config.prepare_workers, len(ranges))
    check_symbol_fits(longest, len(bars.codes), bars.spec, source=source, workers=workers)
    raw = Scratch(stage, len(bars.codes), len(_all_names(bars.spec)))
    coded = _encode(raw, bars, ranges, config)
    bars.close()  # the bars' scratch files: every feature is computed
    del bars
    keep = np.asarray([n not in coded.spec.dropped for n in _all_names(coded.spec)])
    encoded = coded.encoded
    names = (*coded.spec.observed_names, *coded.spec.known_names)
    train = row_splits(encoded.times_ns, config, cuts)[1] == 0
    scaler = _fit_scaler(raw, keep, train & encoded.finite, ranges, names)
    plan = plan_windows(coded, config, source, None, scaler=scaler, cuts=cuts)
    scaler, dtype = plan.preprocessor.scaler, config.feature_store_dtype
    _write_inputs(stage, raw, keep, scaler, encoded.symbol_codes, ranges, dtype)
    raw.close()
    counts = {name: len(plan.anchors[name]) for name in SPLITS}
    warmup = max(coded.spec.warmup_bars, config.baseline_window)
    warn_short_train(counts["train"], int((plan.splits == 0).sum()), warmup, source)
    summary = summarize(source, len(train), plan.preprocessor, plan.index, counts, plan.cuts)
    return _write_vectors(stage, plan, encoded, summary, material, ranges)


def _all_names(spec: FeatureSpec) -> tuple[str, ...]:
    """Every input of `spec`'s groups, those it drops too, in the matrix's order."""
    full = replace(spec, dropped=())
    return (*full.observed_names, *full.known_names)


def _blocks(ranges: Ranges) -> Iterator[tuple[int, int]]:
    """[lo, hi) blocks of at most BLOCK_ROWS rows, never across two symbols."""
    for first, stop in ranges:
        for lo in range(first, stop, BLOCK_ROWS):
            yield lo, min(lo + BLOCK_ROWS, stop)


def _encode(raw: Scratch, bars: SymbolBars, ranges: Ranges, config: DataConfig) -> EncodedBars:
    """Each symbol's unscaled inputs into `raw`; the bars' [N] vectors and
    the spec less the inputs constant on the training rows, as `pipeline._encode_new_run`."""
    spec, rows = bars.spec, len(bars.codes)
    times = bars.times
    train = row_splits(times.as_unit("ns").asi8, config, bars.cuts)[1] == 0
    width = raw.width
    returns = np.empty(rows)
    low, high = np.full(width, np.inf), np.full(width, -np.inf)
    jobs = [
        SymbolJob(
            bars=bars.files[code],
            first=first,
            series=bars.series[first:stop],
            train=train[first:stop],
            spec=spec,
            timezone=bars.timezone,
            scratch=raw.stage.path / SCRATCH,
            width=width,
        )
        for code, (first, stop) in enumerate(ranges)
    ]
    processes = set()
    with raw.stage.errors():  # disk full: one line naming the store, from any worker
        for done in symbol_inputs(jobs, config.prepare_workers):
            returns[done.first : done.first + len(done.returns)] = done.returns
            low, high = np.fmin(low, done.low), np.fmax(high, done.high)
            processes.add(done.pid)
    if config.prepare_workers > 1:
        log.info("feature store: %d symbols computed in %d processes", len(jobs), len(processes))
    spec = replace(spec, dropped=constant_names(spec, low, high))
    keep = np.asarray([n not in spec.dropped for n in _all_names(spec)])
    finite = np.isfinite(returns)
    for lo, hi in _blocks(ranges):
        finite[lo:hi] &= np.isfinite(raw.read(lo, hi, keep)).all(axis=1)
    encoded = EncodedFrame(
        frame=bars.high_low,  # the source the errors name; the range loss's targets
        times=times,
        times_ns=times.as_unit("ns").asi8,
        symbol_codes=bars.codes,
        features=Features(np.empty((rows, 0), np.float32), len(spec.observed_names), returns),
        finite=finite,
        series_codes=bars.series,
    )
    max_gap = resolve_max_gap(config.max_gap, bars.spacing_ns)
    return EncodedBars(encoded, spec, bars.symbols, bars.timezone, max_gap, bars.spacing_ns)


def _fit_scaler(
    raw: Scratch, keep: np.ndarray, rows: np.ndarray, ranges: Ranges, names: tuple[str, ...]
) -> StandardScaler:
    """Each symbol's scaler statistics over its `rows` (the finite training rows), read in
    blocks: `StandardScaler.fit`'s numbers."""
    width = int(keep.sum())
    mean, std = np.empty((len(ranges), width)), np.empty((len(ranges), width))
    for code, bounds in enumerate(ranges):

        def blocks(bounds: tuple[int, int] = bounds) -> Iterator[np.ndarray]:
            for lo, hi in _blocks([bounds]):
                yield raw.read(lo, hi, keep)[rows[lo:hi]]

        mean[code], std[code] = streamed_moments(blocks, width)
    return StandardScaler.from_moments(names, mean, std)


def _write_inputs(
    stage: Staging,
    raw: Scratch,
    keep: np.ndarray,
    scaler: StandardScaler,
    codes: np.ndarray,
    ranges: Ranges,
    dtype: str,
) -> None:
    """`inputs.npy`: the kept inputs scaled, block by block (`scale_in_place`'s numbers),
    stored as `dtype` (float16: rounded from those float32 values)."""
    shape = (raw.rows, int(keep.sum()))
    with stage.array("inputs.npy", shape, np.dtype(dtype)) as writer:
        for lo, hi in _blocks(ranges):
            block = scaler.scale_in_place(raw.read(lo, hi, keep), codes[lo:hi])
            writer.append(stored_block(block, dtype))


def _write_vectors(
    stage: Staging,
    plan: Planned,
    encoded: EncodedFrame,
    summary: DataSummary,
    material: dict[str, Any],
    ranges: Ranges,
) -> dict[str, Any]:
    """The entry's [N] vectors, anchors and JSON files, as `write_entry` writes them."""
    pre = plan.preprocessor
    volatility = profile = signal = None
    if plan.baseline is not None:
        volatility, profile, signal = baseline_tensors(plan.baseline)
    vectors = {
        "targets": pre.target_scaler.transform(encoded.features.returns),
        "symbol_codes": encoded.symbol_codes.astype(np.int64),
        "times": encoded.times.asi8,
        "volatility": volatility,
        "profile": profile,
        "signal": signal,
        "ranges": encoded.log_ranges(),
        "returns": encoded.features.returns,
        "series_codes": encoded.series_codes,
    }
    vectors |= {f"anchors-{name}": plan.anchors[name].astype(np.int64) for name in SPLITS}
    write_files(stage, vectors, pre, summary, material)
    symbols = dict(zip(pre.symbols.categories, map(list, ranges), strict=True))
    width = len(pre.schema.past_names)
    return entry_metadata(
        stage, encoded.times, symbols, rows=len(encoded.times), width=width, pre=pre
    )
