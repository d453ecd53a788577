"""From encoded bars to windows: the gap clock, the windows indexed, the preprocessor fitted
on the training rows (or a resumed run's taken), the base volatility and the anchors past its
warm-up; shared by the preparation in memory (`pipeline.py`) and the streamed one
(`streamed.py`), which differ only in where the input matrix lives."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from foxhunt.data.calendar import gap_clock
from foxhunt.data.config import DataConfig
from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.features import FeatureSpec
from foxhunt.data.fit import fit_preprocessor
from foxhunt.data.new_run import row_splits
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.scaling import CategoryEncoder, StandardScaler
from foxhunt.data.summary import DataSummary
from foxhunt.data.volatility import BaselineRows
from foxhunt.data.windows import WindowIndex, check_windows, index_windows


@dataclass(frozen=True)
class EncodedBars:
    """Bars with their features and what windows and fitting need of them."""

    encoded: EncodedFrame
    spec: FeatureSpec
    symbols: CategoryEncoder
    timezone: str
    max_gap_ns: int | None
    spacing_ns: int


@dataclass(frozen=True)
class Planned:
    preprocessor: Preprocessor
    index: WindowIndex
    anchors: dict[str, np.ndarray]  # each split's, less the base volatility's warm-up
    baseline: BaselineRows | None
    cuts: np.ndarray
    splits: np.ndarray


def plan_windows(
    bars: EncodedBars,
    config: DataConfig,
    source: str,
    preprocessor: Preprocessor | None,
    *,
    scaler: StandardScaler | None = None,
    cuts: np.ndarray | None = None,
) -> Planned:
    """Windows and fitted preprocessing of `bars`; `scaler`: the input scaler, when it was
    fitted already, `cuts`: the split times, when they are known (streamed.py fits both a
    symbol at a time)."""
    encoded, spec = bars.encoded, bars.spec
    cuts, splits = row_splits(encoded.times_ns, config, cuts)
    row_symbols = np.asarray(bars.symbols.categories, dtype=object)[encoded.symbol_codes]
    clock_ns = gap_clock(encoded.times_ns, spec.calendar, config.cross_breaks, row_symbols)
    index = index_windows(
        encoded.series_codes,
        splits,
        clock_ns,
        encoded.finite,
        lookback=config.lookback,
        horizon=config.horizon,
        max_gap_ns=bars.max_gap_ns,
    )
    check_windows(index, config, source, spec.warmup_bars)
    if preprocessor is None:
        preprocessor = fit_preprocessor(
            encoded,
            splits,
            config,
            spec=spec,
            clock_ns=clock_ns,
            max_gap_ns=bars.max_gap_ns,
            bar_spacing_ns=bars.spacing_ns,
            timezone=bars.timezone,
            symbols=bars.symbols,
            scaler=scaler,
        )
    baseline = preprocessor.baseline(encoded)  # once for the warm-up and the windows
    anchors = preprocessor.ready_anchors(index.anchors, baseline)  # less the baseline warm-up
    check_windows(replace(index, anchors=anchors), config, source, spec.warmup_bars)
    return Planned(preprocessor, index, anchors, baseline, cuts, splits)


def summarize(
    source: str,
    rows: int,
    preprocessor: Preprocessor,
    index: WindowIndex,
    windows: dict[str, int],
    cuts: np.ndarray,
) -> DataSummary:
    """The counts of a prepared run, logged once."""
    summary = DataSummary(
        source=source,
        rows=rows,
        symbols=preprocessor.symbols.categories,
        bar_spacing=preprocessor.bar_spacing,
        max_gap=preprocessor.max_gap,
        gaps=index.gaps,
        windows=windows,
        dropped_for_gaps=index.dropped_for_gaps,
        purged=index.purged,
        validation_start=_cut_time(cuts[0], preprocessor.timezone),
        test_start=_cut_time(cuts[1], preprocessor.timezone),
    )
    summary.log()
    return summary


def _cut_time(ns: np.int64, timezone: str) -> pd.Timestamp | None:
    if ns == np.iinfo(np.int64).max:
        return None
    return pd.Timestamp(int(ns), unit="ns", tz="UTC").tz_convert(timezone)
