"""The windows and the preprocessor of a streamed feature store entry, fitted a symbol at a
time (streamed.py): `planned.plan_windows`' numbers without any [N] vector of every bar.

Everything `plan_windows` computes is within a symbol but two sums over every symbol's
training rows: the target scale (`TargetScaler.fit_streamed`: numpy's pairwise sum, leaf by
leaf) and the pooled volatility profile, which only a symbol without a finite training
return takes (fitted then from every symbol's training returns: the one case that holds a
vector of every training bar). The gap clock, the window index, each symbol's profile and
the base volatility are per series or per symbol (pandas' grouped rolling mean starts each
series afresh), and the counts add up. Two passes over the symbols: the windows, counts and
fits (`index_symbols`), then the base volatility, the ready anchors and the entry's [N]
vectors appended to its files symbol after symbol (`write_symbols`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data.calendar import gap_clock
from foxhunt.data.config import DataConfig
from foxhunt.data.dataset import baseline_tensors
from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.features import Features, FeatureSpec
from foxhunt.data.fit import new_preprocessor, untrained
from foxhunt.data.new_run import row_splits
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.scaling import StandardScaler, TargetScaler
from foxhunt.data.streamed_bars import SymbolBars
from foxhunt.data.volatility import IntradayProfile, minute_of_day
from foxhunt.data.windows import SPLITS, WindowIndex, check_windows, gap_flags, index_windows
from foxhunt.storage.staged import ArrayWriter, Staging


@dataclass(frozen=True)
class SymbolEncoded:
    """One symbol's rows of the encoded bars: what the windows and the vectors read."""

    code: int
    first: int  # its first row of the entry
    frame: EncodedFrame  # inputs not held (they are in the scratch matrix)
    splits: np.ndarray  # [n] int8 split codes


Load = Callable[[int], SymbolEncoded]


def encoded_symbol(
    bars: SymbolBars, code: int, returns: np.ndarray, finite: np.ndarray, config: DataConfig,
    num_observed: int,
) -> SymbolEncoded:  # fmt: skip
    """Symbol `code`'s `EncodedFrame` rows from its scratch vectors."""
    rows = bars.rows(code)
    high_low = pd.DataFrame({"high": rows.high, "low": rows.low})
    high_low.attrs["source"] = bars.source
    n = len(rows.times_ns)
    frame = EncodedFrame(
        frame=high_low,
        times=bars.times(rows.times_ns),
        symbol_codes=np.full(n, code, np.int64),
        features=Features(np.empty((n, 0), np.float32), num_observed, returns),
        finite=finite,
        series_codes=rows.series,
    )
    splits = row_splits(rows.times_ns, config, bars.cuts)[1]
    return SymbolEncoded(code, bars.ranges[code][0], frame, splits)


@dataclass(frozen=True)
class Indexed:
    """The first pass: the preprocessor, the windows' counts and each symbol's anchors."""

    preprocessor: Preprocessor
    anchors: list[Path]  # each symbol's, its own rows (scratch files)
    index: WindowIndex  # its anchors empty: the counts of every symbol's
    train_bars: int  # bars of the train split


def _train_returns(
    sym: SymbolEncoded, clock: np.ndarray, max_gap_ns: int | None, tz: str
) -> tuple[np.ndarray, np.ndarray]:
    """(returns, minutes of day) of the train split's rows, a return over a gap NaN: what
    the volatility profile is fitted on (`fit.fit_preprocessor`)."""
    frame, train = sym.frame, sym.splits == 0
    gaps = gap_flags(frame.series_codes, clock, max_gap_ns)
    returns = np.where(gaps, np.nan, frame.features.returns)[train]
    return returns, minute_of_day(frame.times[train], tz)


def _clock(sym: SymbolEncoded, spec: FeatureSpec, config: DataConfig, name: str) -> np.ndarray:
    symbols = np.full(len(sym.splits), name, dtype=object)
    return gap_clock(sym.frame.times_ns, spec.calendar, config.cross_breaks, symbols)


def _save_anchors(path: Path, anchors: dict[str, np.ndarray]) -> Path:
    np.savez(path, train=anchors["train"], validation=anchors["validation"], test=anchors["test"])
    return path


def _load_anchors(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as saved:
        return {split: saved[split] for split in SPLITS}


def index_symbols(  # long: the first pass of plan_windows, a symbol at a time, in its order
    stage: Staging,
    bars: SymbolBars,
    load: Load,
    config: DataConfig,
    spec: FeatureSpec,
    scaler: StandardScaler,
    max_gap_ns: int | None,
) -> Indexed:
    """Each symbol's windows (its anchors in a scratch file), its profile curve and its
    training returns' count; the checks `plan_windows` makes, in its order; the
    preprocessor."""
    names = bars.symbols.categories
    bucket = round(bars.spacing_ns / 60e9)
    anchors: list[Path] = []
    sizes = dict.fromkeys(SPLITS, 0)
    curves: list[IntradayProfile | None] = []
    counts = np.zeros(3, np.int64)  # gaps, dropped for gaps, purged
    trained, train_bars, targets = [], 0, 0
    span: list[pd.Timestamp] = []
    for code, name in enumerate(names):
        sym = load(code)
        clock = _clock(sym, spec, config, name)
        frame = sym.frame
        index = index_windows(
            frame.series_codes, sym.splits, clock, frame.finite, lookback=config.lookback,
            horizon=config.horizon, max_gap_ns=max_gap_ns,
        )  # fmt: skip
        anchors.append(_save_anchors(stage.path / f"anchors-{code}.npz", index.anchors))
        sizes = {split: sizes[split] + len(index.anchors[split]) for split in SPLITS}
        counts += (index.gaps, index.dropped_for_gaps, index.purged)
        train = (sym.splits == 0) & frame.finite
        trained.append((bool(train.any()), frame.times.min()))
        train_bars += int((sym.splits == 0).sum())
        targets += int(np.isfinite(frame.features.returns[train]).sum())
        if (sym.splits == 0).any():
            times = frame.times[sym.splits == 0]
            span = [min([*span[:1], times.min()]), max([*span[1:], times.max()])]
        returns, minutes = _train_returns(sym, clock, max_gap_ns, bars.timezone)
        seen = len(returns) > 0 and bool(np.isfinite(returns).any())
        fitted = IntradayProfile.fit(returns, minutes, bucket_minutes=bucket)
        curves.append(fitted if seen or len(names) == 1 else None)
    whole = WindowIndex({s: np.empty(n, np.int64) for s, n in sizes.items()}, *map(int, counts))
    check_windows(whole, config, bars.source, spec.warmup_bars)
    for code, (ok, first) in enumerate(trained):
        if not ok:
            text = f"{span[0]} .. {span[1]}" if span else "empty"
            raise untrained(bars.source, names[code], first, text)

    def pooled() -> IntradayProfile:  # every symbol's training returns: only when needed
        parts = []
        for code, name in enumerate(names):
            sym = load(code)
            parts.append(_train_returns(sym, _clock(sym, spec, config, name), max_gap_ns,
                                        bars.timezone))  # fmt: skip
        returns, minutes = (np.concatenate(p) for p in zip(*parts, strict=True))
        return IntradayProfile.fit(returns, minutes, bucket_minutes=bucket)

    profile = curves[0] if len(names) == 1 else IntradayProfile.joined(curves, bucket, pooled)
    assert profile is not None

    def blocks() -> Iterator[np.ndarray]:
        for code in range(len(names)):
            sym = load(code)
            returns = sym.frame.features.returns[(sym.splits == 0) & sym.frame.finite]
            yield returns[np.isfinite(returns)]

    pre = new_preprocessor(
        config, spec=spec, scaler=scaler, target_scaler=TargetScaler.fit_streamed(blocks, targets),
        profile=profile, max_gap_ns=max_gap_ns, bar_spacing_ns=bars.spacing_ns,
        timezone=bars.timezone, symbols=bars.symbols,
    )  # fmt: skip
    empty = WindowIndex({}, *map(int, counts))
    return Indexed(pre, anchors, empty, train_bars)


def write_symbols(stage: Staging, bars: SymbolBars, load: Load, indexed: Indexed) -> dict[str, int]:
    """The second pass: each symbol's base volatility and [N] vectors appended to the
    entry's files (`feature_store.write_entry`'s), its anchors less the base volatility's
    warm-up kept in its scratch file; the ready windows of each split."""
    pre, rows = indexed.preprocessor, bars.ranges[-1][1]
    ready = dict.fromkeys(SPLITS, 0)
    with ExitStack() as files:
        writers: dict[str, ArrayWriter] = {}

        def append(name: str, values: np.ndarray | None) -> None:
            if values is None:
                return
            if name not in writers:
                array = stage.array(f"{name}.npy", (rows, *values.shape[1:]), values.dtype)
                writers[name] = files.enter_context(array)
            writers[name].append(values)

        for code, path in enumerate(indexed.anchors):
            sym = load(code)
            frame = sym.frame
            baseline = pre.baseline(frame)
            kept = pre.ready_anchors(_load_anchors(path), baseline)
            _save_anchors(path, kept)
            ready = {split: ready[split] + len(kept[split]) for split in SPLITS}
            vectors = (None, None, None) if baseline is None else baseline_tensors(baseline)
            append("targets", pre.target_scaler.transform(frame.features.returns))
            append("symbol_codes", frame.symbol_codes)
            append("times", frame.times_ns)
            for name, values in zip(("volatility", "profile", "signal"), vectors, strict=True):
                append(name, None if values is None else values.numpy())
            append("ranges", frame.log_ranges())
            append("returns", frame.features.returns)
            append("series_codes", frame.series_codes)
    return ready


def write_anchors(
    stage: Staging, bars: SymbolBars, indexed: Indexed, ready: dict[str, int]
) -> None:
    """`anchors-SPLIT.npy`: each symbol's ready anchors as rows of the entry, symbol after
    symbol; the scratch files removed."""
    for split in SPLITS:
        with stage.array(f"anchors-{split}.npy", (ready[split],), np.int64) as writer:
            for code, path in enumerate(indexed.anchors):
                writer.append(_load_anchors(path)[split] + bars.ranges[code][0])
    for path in indexed.anchors:
        path.unlink()
