"""compute_features: a validated frame's inputs, today's set then the chosen groups'."""

from __future__ import annotations

import numpy as np
import pandas as pd

from foxhunt.data.features.bars import Bars, session_numbers
from foxhunt.data.features.base import Features, base_columns, log_returns
from foxhunt.data.features.known import known_calendar
from foxhunt.data.features.spec import FeatureSpec
from foxhunt.errors import ConfigError


def minutes_of_day(times: pd.DatetimeIndex, timezone: str) -> np.ndarray:
    local = times.tz_convert(timezone) if times.tz is not None else times
    return np.asarray(local.hour * 60 + local.minute, dtype=np.int64)


def make_bars(
    frame: pd.DataFrame, spec: FeatureSpec, timezone: str, series: np.ndarray, returns: np.ndarray
) -> Bars:
    times = pd.DatetimeIndex(frame["timestamp"])
    times_ns = times.as_unit("ns").asi8
    price = {c: frame[c].to_numpy(np.float64) for c in ("open", "high", "low", "close", "volume")}
    return Bars(
        **price,
        times_ns=times_ns,
        returns=returns,
        series=series,
        session=session_numbers(series, times_ns, spec.session_gap_ns),
        minute=minutes_of_day(times, timezone),
        symbols=frame["symbol"].to_numpy(),
        volume_profile={s: np.asarray(v) for s, v in spec.volume_profile},
    )


def group_columns(bars: Bars, spec: FeatureSpec) -> list[np.ndarray]:
    """The observed groups' columns, less the dropped ones."""
    out = []
    for group, windows in spec.observed_groups:
        if group.cross and len(np.unique(bars.symbols)) < 2:
            raise ConfigError(
                f"DataConfig.feature_groups: group {group.name!r} needs several symbols and the "
                f"bars hold one ({bars.symbols[0]}); leave it out or add symbols"
            )
        values = group.compute(bars, windows)
        names = [c.name for c in group.columns(windows)]
        out += [values[:, j] for j, name in enumerate(names) if name not in spec.dropped]
    return out


def compute_features(
    frame: pd.DataFrame, spec: FeatureSpec, *, timezone: str, symbol_codes: np.ndarray
) -> Features:
    """Inputs and returns of a validated frame (sorted by symbol [, contract] then time);
    `symbol_codes` are the series codes that bound every rolling statistic."""
    returns = log_returns(frame["close"].to_numpy(dtype=np.float64), symbol_codes)
    columns = base_columns(frame, returns, spec.volatility_windows)
    if spec.groups:
        columns += group_columns(make_bars(frame, spec, timezone, symbol_codes, returns), spec)
    columns += [frame[c].to_numpy(np.float64) for c in spec.observed_columns]
    num_observed = len(columns)
    times, symbols = pd.DatetimeIndex(frame["timestamp"]), frame["symbol"].to_numpy()
    columns += list(known_calendar(times, spec, timezone, symbols).T)
    columns += [frame[c].to_numpy(np.float64) for c in spec.known_columns]
    return Features(inputs=np.stack(columns, axis=1), num_observed=num_observed, returns=returns)
