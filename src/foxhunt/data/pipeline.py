"""`prepare_in_memory`: bars in; train/validation/test windows, schema and fitted
preprocessing out, all in memory (`feature_store.prepare_data` may read them from disk)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from foxhunt.data.calendar import gap_clock
from foxhunt.data.config import DataConfig
from foxhunt.data.contracts import contract_series_starts, find_contract_column
from foxhunt.data.dataset import WindowDataset
from foxhunt.data.encoded import EncodedFrame, FeatureSchema
from foxhunt.data.features import FeatureSpec, parse_groups
from foxhunt.data.features.fitting import constant_inputs, drop_inputs, fit_feature_state
from foxhunt.data.fit import check_compatible, fit_preprocessor, new_run_calendar, resolve_max_gap
from foxhunt.data.footprint import check_matrix_fits
from foxhunt.data.io import normalize_timestamps, timezone_name
from foxhunt.data.planted import builtin_market, generate_planted
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.scaling import CategoryEncoder
from foxhunt.data.series import validated_series
from foxhunt.data.sources import apply_filter, read_source, row_filter
from foxhunt.data.summary import DataSummary
from foxhunt.data.synthetic import generate_bars
from foxhunt.data.timesplit import time_split_codes
from foxhunt.data.windows import (
    SPLITS,
    WindowIndex,
    check_windows,
    index_windows,
    median_spacing_ns,
    split_codes,
    split_cuts,
    warn_short_train,
)


@dataclass(frozen=True)
class PreparedData:
    train: WindowDataset
    validation: WindowDataset
    test: WindowDataset
    schema: FeatureSchema
    preprocessor: Preprocessor
    summary: DataSummary
    #: the bars behind the windows for `data.rebase` (their inputs are spent: scaled in place)
    encoded: EncodedFrame | None = field(default=None, repr=False, compare=False)


def load_frame(config: DataConfig) -> pd.DataFrame:
    """The configured bars file (normalized, not yet validated), or the built-in synthetic bars
    when `config.path` is None."""
    bounds = row_filter(config.start, config.end, config.symbols, config.timezone)
    if config.path is not None:  # validated by the caller, with its row minimum and columns
        return read_source(
            config.path,
            timezone=config.timezone,
            timestamp_column=config.timestamp_column,
            symbol_column=config.symbol_column,
            bounds=bounds,
        )
    if config.synthetic_market == "planted":
        market = builtin_market(
            config.synthetic_days, config.synthetic_seed, config.synthetic_symbols
        )
        frame = generate_planted(market).frame
    else:
        frame = generate_bars(
            days=config.synthetic_days, seed=config.synthetic_seed, symbols=config.synthetic_symbols
        )
    kind = "planted-signal" if config.synthetic_market == "planted" else "synthetic"
    source = f"{kind} bars ({config.synthetic_days} days, seed {config.synthetic_seed})"
    frame["timestamp"] = normalize_timestamps(
        frame["timestamp"], timezone=config.timezone, column="timestamp", source=source
    )
    frame = apply_filter(frame, bounds)
    frame.attrs["source"] = source
    return frame


def _encode_new_run(
    frame: pd.DataFrame, config: DataConfig, spec: FeatureSpec, source: str, min_rows: int
) -> tuple[EncodedFrame, FeatureSpec, CategoryEncoder, int]:
    """A new run's validated, encoded bars, its spec with calendar and fitted feature state,
    symbol encoder and median bar spacing."""
    frame, contracts = validated_series(
        frame,
        source=source,
        min_rows=min_rows,
        extra_columns=spec.user_columns,
        contract_column=config.contract_column,
        roll_adjust=config.roll_adjust,
        may_roll=config.path is not None,  # the built-in bars have no rolls
    )
    timezone = timezone_name(frame["timestamp"].dt.tz)
    spec = replace(spec, calendar=new_run_calendar(config, frame, source))
    check_matrix_fits(len(frame), spec, source=source, store=config.feature_store)
    encoder = CategoryEncoder.fit("symbol", frame["symbol"].unique())
    codes = encoder.encode(frame["symbol"].to_numpy(), source=source)
    series = np.cumsum(contract_series_starts(codes, frame, contracts)) - 1
    times_ns = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    spacing = median_spacing_ns(series, times_ns)
    train = _splits(times_ns, config)[1] == 0
    # the library's state (sessions, typical volume) is fitted on the training rows only
    spec = fit_feature_state(
        frame,
        spec,
        series_codes=series,
        train=train,
        timezone=timezone,
        spacing_ns=spacing,
        # a back-adjusted series keeps its contract column: the expiry of the one held
        contract_column=find_contract_column(frame, config.contract_column, source),
    )
    encoded = EncodedFrame.build(
        frame, spec, timezone=timezone, codes=codes, contract_column=contracts
    )
    if spec.groups and (dropped := constant_inputs(encoded.features, spec, train)):
        spec, encoded = drop_inputs(spec, encoded, dropped)
    return encoded, spec, encoder, spacing


@dataclass(frozen=True)
class _Encoded:
    """Bars with their features and what windows and fitting need of them."""

    encoded: EncodedFrame
    spec: FeatureSpec
    symbols: CategoryEncoder
    timezone: str
    max_gap_ns: int | None
    spacing_ns: int


def _encode(
    frame: pd.DataFrame,
    config: DataConfig,
    source: str,
    preprocessor: Preprocessor | None,
) -> _Encoded:
    """The features of `frame`: a new run's (its spec fitted on its training rows), or a
    resumed run's, exactly as its saved preprocessor computes them."""
    spec = FeatureSpec(
        config.volatility_windows,
        config.observed_columns,
        config.known_columns,
        groups=parse_groups(config.feature_groups),
    )
    min_rows = config.lookback + config.horizon
    if preprocessor is not None:
        check_compatible(preprocessor, config, spec)
        check_matrix_fits(len(frame), preprocessor.spec, source=source, store=config.feature_store)
        return _Encoded(
            encoded=preprocessor.encode(frame, min_rows=min_rows),
            spec=preprocessor.spec,
            symbols=preprocessor.symbols,
            timezone=preprocessor.timezone,
            max_gap_ns=preprocessor.max_gap_ns,
            spacing_ns=preprocessor.bar_spacing_ns,
        )
    encoded, spec, encoder, spacing = _encode_new_run(frame, config, spec, source, min_rows)
    return _Encoded(
        encoded=encoded,
        spec=spec,
        symbols=encoder,
        timezone=timezone_name(encoded.frame["timestamp"].dt.tz),
        max_gap_ns=resolve_max_gap(config.max_gap, spacing),
        spacing_ns=spacing,
    )


def prepare_in_memory(
    config: DataConfig, *, preprocessor: Preprocessor | None = None
) -> PreparedData:
    """Read (or synthesize) bars, split them in time, fit scalers on train, index windows,
    all in memory (`foxhunt.data.prepare_data` goes through a feature store when configured).

    With `preprocessor` (a resumed run) its scalers, symbol codes, timezone and max gap are
    reused rather than fitted, so the inputs are exactly those the saved model was trained on.
    """
    frame = load_frame(config)
    source = str(frame.attrs.get("source", config.path))
    bars = _encode(frame, config, source, preprocessor)
    del frame  # the validated copy in `bars.encoded` is the one kept
    encoded, spec = bars.encoded, bars.spec
    cuts, splits = _splits(encoded.times_ns, config)
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
        )
    baseline = preprocessor.baseline(encoded)  # once for the warm-up and the windows
    anchors = preprocessor.ready_anchors(index.anchors, baseline)  # less the baseline warm-up
    check_windows(replace(index, anchors=anchors), config, source, spec.warmup_bars)
    datasets = preprocessor.windows(encoded, anchors, baseline, consume=True)
    warmup = max(spec.warmup_bars, config.baseline_window)
    warn_short_train(len(datasets["train"]), int((splits == 0).sum()), warmup, source)
    summary = _summary(source, encoded, preprocessor, index, datasets, cuts)
    return PreparedData(
        train=datasets["train"],
        validation=datasets["validation"],
        test=datasets["test"],
        schema=preprocessor.schema,
        preprocessor=preprocessor,
        summary=summary,
        encoded=encoded,
    )


def _summary(
    source: str,
    encoded: EncodedFrame,
    preprocessor: Preprocessor,
    index: WindowIndex,
    datasets: dict[str, WindowDataset],
    cuts: np.ndarray,
) -> DataSummary:
    """The counts of a prepared run, logged once."""
    summary = DataSummary(
        source=source,
        rows=len(encoded.times_ns),
        symbols=preprocessor.symbols.categories,
        bar_spacing=preprocessor.bar_spacing,
        max_gap=preprocessor.max_gap,
        gaps=index.gaps,
        windows={name: len(datasets[name]) for name in SPLITS},
        dropped_for_gaps=index.dropped_for_gaps,
        purged=index.purged,
        validation_start=_cut_time(cuts[0], preprocessor.timezone),
        test_start=_cut_time(cuts[1], preprocessor.timezone),
    )
    summary.log()
    return summary


def _splits(times_ns: np.ndarray, config: DataConfig) -> tuple[np.ndarray, np.ndarray]:
    """The two split times and each row's split code (0 train, 1 validation, 2 test)."""
    if config.split is None:
        cuts = split_cuts(times_ns, config.val_fraction, config.test_fraction)
        return cuts, split_codes(times_ns, cuts)
    bounds = config.split.bounds_ns()  # a walk-forward fold: explicit bounds, rows outside unused
    cuts = np.asarray([bounds[1], bounds[3]], dtype=np.int64)
    return cuts, time_split_codes(times_ns, config.split)


def _cut_time(ns: np.int64, timezone: str) -> pd.Timestamp | None:
    if ns == np.iinfo(np.int64).max:
        return None
    return pd.Timestamp(int(ns), unit="ns", tz="UTC").tz_convert(timezone)
