"""Engineered inputs per row and the return target, computed per symbol, never across symbols.

Observed (past-only) inputs at bar t:
    log_return      log(close_t / close_{t-1})          (NaN at each symbol's first bar)
    log_range       log(high_t / low_t)
    close_open      log(close_t / open_t)
    log_volume      log(1 + volume_t)
    realized_vol_w  std of the last w log returns        (NaN for the first w bars)
    + the user's `observed_columns`, as they are
Known (past and future) inputs, calendar in the feature timezone:
    minute_sin/cos  minute of day on a 24h circle
    weekday_sin/cos day of week on a 7-day circle
    with an exchange calendar (`FeatureSpec.calendar`, data/calendar.py), of the bar's session:
    minutes_to_close, minutes_since_open, early_close (1 in a holiday-shortened session)
    + the user's `known_columns`, as they are
Target of a window whose last observed bar is t: log_return at t+1 .. t+H.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.data.calendar import SESSION_FEATURES, check_calendar_name, session_features

BASE_OBSERVED = ("log_return", "log_range", "close_open", "log_volume")
CALENDAR = ("minute_sin", "minute_cos", "weekday_sin", "weekday_cos")
TARGET_NAME = "log_return"


@dataclass(frozen=True)
class FeatureSpec:
    """Which inputs exist, in the order they are fed to the model."""

    volatility_windows: tuple[int, ...] = (12, 48)
    observed_columns: tuple[str, ...] = ()
    known_columns: tuple[str, ...] = ()
    calendar: str | None = None  # exchange calendar of the session features; None = none

    @property
    def observed_names(self) -> tuple[str, ...]:
        vol = tuple(f"realized_vol_{w}" for w in self.volatility_windows)
        return (*BASE_OBSERVED, *vol, *self.observed_columns)

    @property
    def known_names(self) -> tuple[str, ...]:
        session = SESSION_FEATURES if self.calendar is not None else ()
        return (*CALENDAR, *session, *self.known_columns)

    @property
    def user_columns(self) -> tuple[str, ...]:
        return (*self.observed_columns, *self.known_columns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "volatility_windows": list(self.volatility_windows),
            "observed_columns": list(self.observed_columns),
            "known_columns": list(self.known_columns),
            "calendar": self.calendar,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSpec:
        calendar = data.get("calendar")  # absent before calendars: none
        if calendar is not None:
            check_calendar_name(calendar, "preprocessor spec.calendar")
        return cls(
            volatility_windows=tuple(int(w) for w in data["volatility_windows"]),
            observed_columns=tuple(data["observed_columns"]),
            known_columns=tuple(data["known_columns"]),
            calendar=calendar,
        )


@dataclass(frozen=True)
class Features:
    """Unscaled float64 inputs of every row of a frame sorted by symbol and time."""

    inputs: np.ndarray  # [N, P]: observed columns first, then known columns
    num_observed: int
    returns: np.ndarray  # [N] log return of each bar; the target series

    @property
    def finite_rows(self) -> np.ndarray:
        """[N] bool: every input and the return of the row are finite (no warm-up NaN)."""
        return np.isfinite(self.inputs).all(axis=1) & np.isfinite(self.returns)


def series_starts(symbol_codes: np.ndarray) -> np.ndarray:
    """[N] bool: the row starts a new symbol's series (rows sorted by symbol)."""
    starts = np.ones(len(symbol_codes), dtype=bool)
    starts[1:] = symbol_codes[1:] != symbol_codes[:-1]
    return starts


def calendar_features(times: pd.DatetimeIndex, timezone: str) -> np.ndarray:
    """[N, 4] minute-of-day and day-of-week on circles, in local time of `timezone`."""
    local = times.tz_convert(timezone) if times.tz is not None else times
    minute = local.hour.to_numpy() * 60.0 + local.minute.to_numpy() + local.second.to_numpy() / 60
    day = local.day_of_week.to_numpy().astype(np.float64)
    a, b = 2 * np.pi * minute / 1440.0, 2 * np.pi * day / 7.0
    return np.stack([np.sin(a), np.cos(a), np.sin(b), np.cos(b)], axis=1)


def known_calendar(times: pd.DatetimeIndex, spec: FeatureSpec, timezone: str) -> np.ndarray:
    """[N, 4 or 7] the known inputs that the calendar alone decides, at any times."""
    clock = calendar_features(times, timezone)
    if spec.calendar is None:
        return clock
    return np.concatenate([clock, session_features(spec.calendar, times.as_unit("ns").asi8)], 1)


def compute_features(
    frame: pd.DataFrame, spec: FeatureSpec, *, timezone: str, symbol_codes: np.ndarray
) -> Features:
    """Inputs and returns of a validated frame (sorted by symbol then time)."""
    close = frame["close"].to_numpy(dtype=np.float64)
    log_close = np.log(close)
    returns = np.empty_like(log_close)
    returns[0] = np.nan
    returns[1:] = np.diff(log_close)
    returns[series_starts(symbol_codes)] = np.nan  # never a return across two symbols
    high, low = frame["high"].to_numpy(np.float64), frame["low"].to_numpy(np.float64)
    columns = [
        returns,
        np.log(high / low),
        log_close - np.log(frame["open"].to_numpy(np.float64)),
        np.log1p(frame["volume"].to_numpy(np.float64)),
    ]
    # A full window (min_periods = w) that reaches back over a symbol's first row meets its
    # NaN return and is NaN itself, so no volatility mixes two symbols.
    series = pd.Series(returns)
    columns += [series.rolling(w, min_periods=w).std().to_numpy() for w in spec.volatility_windows]
    columns += [frame[c].to_numpy(np.float64) for c in spec.observed_columns]
    num_observed = len(columns)
    columns += list(known_calendar(pd.DatetimeIndex(frame["timestamp"]), spec, timezone).T)
    columns += [frame[c].to_numpy(np.float64) for c in spec.known_columns]
    return Features(inputs=np.stack(columns, axis=1), num_observed=num_observed, returns=returns)
