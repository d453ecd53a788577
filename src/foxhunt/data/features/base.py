"""Today's inputs, the default set, and the target: computed per series, never across two.

Observed (past-only) inputs at bar t:
    log_return      log(close_t / close_{t-1})          (NaN at each series' first bar)
    log_range       log(high_t / low_t)
    close_open      log(close_t / open_t)
    log_volume      log(1 + volume_t)
    realized_vol_w  std of the last w log returns        (NaN for the first w bars)
Known inputs: clock.py. Target of a window whose last observed bar is t: log_return at
t+1 .. t+H.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from foxhunt.data.features.matrix import finite_rows

BASE_OBSERVED = ("log_return", "log_range", "close_open", "log_volume")
CALENDAR = ("minute_sin", "minute_cos", "weekday_sin", "weekday_cos")
TARGET_NAME = "log_return"


@dataclass(frozen=True)
class Features:
    """Unscaled inputs of every row of a frame sorted by symbol and time."""

    inputs: np.ndarray  # [N, P] float64 (float32 with library groups): observed, then known
    num_observed: int
    returns: np.ndarray  # [N] log return of each bar; the target series

    @property
    def finite_rows(self) -> np.ndarray:
        """[N] bool: every input and the return of the row are finite (no warm-up NaN)."""
        return finite_rows(self.inputs) & np.isfinite(self.returns)


def series_starts(symbol_codes: np.ndarray) -> np.ndarray:
    """[N] bool: the row starts a new symbol's series (rows sorted by symbol)."""
    starts = np.ones(len(symbol_codes), dtype=bool)
    starts[1:] = symbol_codes[1:] != symbol_codes[:-1]
    return starts


def log_returns(close: np.ndarray, series_codes: np.ndarray) -> np.ndarray:
    """[N] log(close_t / close_{t-1}), NaN at each series' first bar."""
    log_close = np.log(close)
    returns = np.empty_like(log_close)
    returns[0] = np.nan
    returns[1:] = np.diff(log_close)
    returns[series_starts(series_codes)] = np.nan  # never a return across two series
    return returns


def base_columns(
    frame: pd.DataFrame,
    returns: np.ndarray,
    volatility_windows: tuple[int, ...],
    series_codes: np.ndarray,
) -> list[np.ndarray]:
    """Today's observed inputs: the four bar measures and the rolling volatilities."""
    close = frame["close"].to_numpy(dtype=np.float64)
    high, low = frame["high"].to_numpy(np.float64), frame["low"].to_numpy(np.float64)
    columns = [
        returns,
        np.log(high / low),
        np.log(close) - np.log(frame["open"].to_numpy(np.float64)),
        np.log1p(frame["volume"].to_numpy(np.float64)),
    ]
    # One series at a time: pandas' rolling std carries its running sums from row to row, so
    # over the whole frame a series' values would round differently from the same series
    # alone, and a store prepared a symbol at a time (data/streamed.py) could not equal the
    # in-memory matrix bit for bit.
    edges = [*np.flatnonzero(series_starts(series_codes)).tolist(), len(returns)]
    for w in volatility_windows:
        column = np.empty(len(returns))
        for start, stop in itertools.pairwise(edges):
            one = pd.Series(returns[start:stop]).rolling(w, min_periods=w).std()
            column[start:stop] = one.to_numpy()
        columns.append(column)
    return columns
