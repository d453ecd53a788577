"""A new run's bars validated and its feature state fitted on its training rows: where both
preparations start, the one in memory (`pipeline.py`) and the one streamed into a feature
store a symbol at a time (`streamed.py`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from foxhunt.data.config import DataConfig
from foxhunt.data.contracts import contract_series_starts, find_contract_column
from foxhunt.data.features import FeatureSpec
from foxhunt.data.features.fitting import fit_feature_state
from foxhunt.data.fit import new_run_calendar
from foxhunt.data.io import timezone_name
from foxhunt.data.scaling import CategoryEncoder
from foxhunt.data.series import validated_series
from foxhunt.data.timesplit import time_split_codes
from foxhunt.data.windows import median_spacing_ns, split_codes, split_cuts


@dataclass(frozen=True)
class NewRunBars:
    """Validated bars (sorted by symbol [, contract], time) and what was fitted on them."""

    frame: pd.DataFrame
    contracts: str | None  # the contract column the series split on (None: none)
    spec: FeatureSpec  # with its calendar and the feature state fitted on the training rows
    symbols: CategoryEncoder
    codes: np.ndarray  # [N] symbol codes, non-decreasing
    series: np.ndarray  # [N] series codes (a symbol, or one per contract), non-decreasing
    spacing_ns: int
    timezone: str


def row_splits(
    times_ns: np.ndarray, config: DataConfig, cuts: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The two split times and each row's split code (0 train, 1 validation, 2 test);
    `cuts`: the split times of all the bars, when `times_ns` are some of them (or known)."""
    if config.split is None:
        if cuts is None:
            cuts = split_cuts(times_ns, config.val_fraction, config.test_fraction)
        return cuts, split_codes(times_ns, cuts)
    bounds = config.split.bounds_ns()  # a walk-forward fold: explicit bounds, rows outside unused
    cuts = np.asarray([bounds[1], bounds[3]], dtype=np.int64)
    return cuts, time_split_codes(times_ns, config.split)


def validated_bars(
    frame: pd.DataFrame, config: DataConfig, spec: FeatureSpec, source: str, min_rows: int
) -> tuple[pd.DataFrame, str | None]:
    """`validated_series` with a new run's settings: the whole frame (in memory) or one
    symbol's bars (streamed, data/streamed_bars.py) checked alike."""
    return validated_series(
        frame,
        source=source,
        min_rows=min_rows,
        extra_columns=spec.user_columns,
        contract_column=config.contract_column,
        roll_adjust=config.roll_adjust,
        may_roll=config.path is not None,  # the built-in bars have no rolls
    )


def fit_new_run(
    frame: pd.DataFrame, config: DataConfig, spec: FeatureSpec, source: str, min_rows: int
) -> NewRunBars:
    """`frame` validated, its calendar chosen, symbols encoded and the feature library's
    state (sessions, typical volume, instrument descriptors) fitted on its training rows."""
    frame, contracts = validated_bars(frame, config, spec, source, min_rows)
    timezone = timezone_name(frame["timestamp"].dt.tz)
    spec = replace(spec, calendar=new_run_calendar(config, frame, source))
    encoder = CategoryEncoder.fit("symbol", frame["symbol"].unique())
    codes = encoder.encode(frame["symbol"].to_numpy(), source=source)
    series = np.cumsum(contract_series_starts(codes, frame, contracts)) - 1
    times_ns = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    spacing = median_spacing_ns(series, times_ns)
    spec = fit_feature_state(
        frame,
        spec,
        series_codes=series,
        train=row_splits(times_ns, config)[1] == 0,
        timezone=timezone,
        spacing_ns=spacing,
        # a back-adjusted series keeps its contract column: the expiry of the one held
        contract_column=find_contract_column(frame, config.contract_column, source),
    )
    return NewRunBars(frame, contracts, spec, encoder, codes, series, spacing, timezone)
