"""The bars every feature group reads: OHLCV of rows sorted by series then time, the
per-series log returns, session numbers and the helpers that keep rolling and session
statistics inside one series (a symbol, or a contract)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data.features.matrix import write_columns

#: Without a fitted session gap, a step longer than this many median bar spacings (within a
#: series) starts a new session: the daily break, a weekend, a holiday.
SESSION_GAP_FACTOR = 3.0


@dataclass(frozen=True)
class OtherSymbols:
    """What the cross group reads of the other symbols when one symbol's rows are computed
    alone (data/streamed.py): every symbol's name, sorted, and a file of each holding its
    `times_ns` and its `own` measures at the group's windows (cross.own_measures)."""

    names: tuple[str, ...]
    files: tuple[Path, ...]  # .npz, in the order of `names`


@dataclass(frozen=True)
class Bars:
    """[N] float64 OHLCV and what the groups derive from it, rows sorted by series, time."""

    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    times_ns: np.ndarray  # int64 UTC
    returns: np.ndarray  # log(close_t / close_{t-1}), NaN at each series' first bar
    series: np.ndarray  # int64 series code, non-decreasing
    session: np.ndarray  # int64 session number, non-decreasing, new at each series start
    minute: np.ndarray  # int64 minute of day in the feature timezone
    symbols: np.ndarray  # object: each row's symbol name
    volume_profile: dict[str, np.ndarray]  # symbol -> [1440] typical log volume by minute
    gap_ns: int = 0  # a step longer than this starts a session (`session_gap`)
    others: OtherSymbols | None = None  # one symbol's rows computed alone (data/streamed.py)

    @property
    def log_close(self) -> np.ndarray:
        return np.log(self.close)

    def bounds(self) -> list[tuple[int, int]]:
        """(start, stop) rows of each series."""
        starts = np.flatnonzero(np.diff(self.series, prepend=self.series[:1] - 1))
        stops = np.append(starts[1:], len(self.series))
        return list(zip(starts.tolist(), stops.tolist(), strict=True))


def session_gap(series: np.ndarray, times_ns: np.ndarray, gap_ns: int | None) -> int:
    """`gap_ns`, or without one (None) SESSION_GAP_FACTOR x the median spacing of these bars."""
    if gap_ns is not None:
        return gap_ns
    same = series[1:] == series[:-1]
    steps = np.diff(times_ns)[same]
    return int(SESSION_GAP_FACTOR * np.median(steps)) if len(steps) else 0


def session_numbers(series: np.ndarray, times_ns: np.ndarray, gap_ns: int) -> np.ndarray:
    """[N] session number: a new one at each series start and each step over `gap_ns`."""
    new = np.ones(len(series), dtype=bool)
    if len(series) > 1:
        new[1:] = (series[1:] != series[:-1]) | (np.diff(times_ns) > gap_ns)
    return np.cumsum(new) - 1


def per_series(bars: Bars, out: np.ndarray, fn: Callable[[slice], list[np.ndarray]]) -> None:
    """Fill `out` [N, k] (a view of the input matrix) with `fn(rows)`, the k columns of each
    series' slice of rows, so that no rolling statistic or moving average ever reaches into
    another series."""
    for start, stop in bars.bounds():
        write_columns(out[start:stop], fn(slice(start, stop)))


class Rolling:
    """Full-window rolling sums and means of one series' values `x`, for any number of
    windows: NaN until `window` values are in, and wherever the window holds a NaN. They are
    differences of cumulative sums, taken once for every window (a few times faster than
    pandas' rolling, and as causal: row t reads rows <= t only)."""

    def __init__(self, x: np.ndarray) -> None:
        missing = np.isnan(x)
        self.sums = np.concatenate([[0.0], np.cumsum(np.where(missing, 0.0, x))])
        self.holes = np.concatenate([[0], np.cumsum(missing)])

    def sum(self, window: int) -> np.ndarray:
        return self._total(window, mean=False)

    def mean(self, window: int) -> np.ndarray:
        return self._total(window, mean=True)

    def _total(self, window: int, *, mean: bool) -> np.ndarray:
        sums, holes = self.sums, self.holes
        out = np.full(len(sums) - 1, np.nan)
        if window <= len(out):
            total = sums[window:] - sums[:-window]
            total[holes[window:] - holes[:-window] > 0] = np.nan
            out[window - 1 :] = total / window if mean else total
        return out


def rolling(x: np.ndarray, window: int, how: str) -> np.ndarray:
    """A full-window rolling statistic of one series: NaN until `window` values are in, and
    wherever the window holds a NaN. Sums and means are `Rolling`'s; maxima and minima of
    values without NaN scipy's trailing filters (the same numbers, 2-3x faster); the rest is
    pandas'."""
    if how == "sum":
        return Rolling(x).sum(window)
    if how == "mean":
        return Rolling(x).mean(window)
    if how in ("max", "min") and not np.isnan(x).any():
        from scipy.ndimage import maximum_filter1d, minimum_filter1d  # not at --help

        extreme = maximum_filter1d if how == "max" else minimum_filter1d
        # origin (w - 1) // 2 puts the window at rows t-w+1 .. t; "nearest" pads only those
        # first w - 1 rows, which are NaN anyway
        out = extreme(x, size=window, origin=(window - 1) // 2, mode="nearest")
        out[: window - 1] = np.nan
        return out
    roll = pd.Series(x).rolling(window, min_periods=window)
    return np.array(getattr(roll, how)().to_numpy(), dtype=np.float64)


def ewm_mean(x: np.ndarray, *, span: float | None = None, alpha: float | None = None) -> np.ndarray:
    """A recursive exponential average of one series, NaN for its first `span` values."""
    warm = int(span) if span is not None else round(1 / alpha) if alpha else 1
    average = pd.Series(x).ewm(span=span, alpha=alpha, adjust=False, min_periods=warm)
    return np.array(average.mean().to_numpy(), dtype=np.float64)


def session_first_row(session: np.ndarray) -> np.ndarray:
    """[N] the row index of each row's session's first bar."""
    starts = np.ones(len(session), dtype=bool)
    starts[1:] = session[1:] != session[:-1]
    return np.maximum.accumulate(np.where(starts, np.arange(len(session)), 0))


def session_cumulative(x: np.ndarray, session: np.ndarray, how: str) -> np.ndarray:
    """Running cumsum / cummax / cummin of `x` since its session's first bar (causal)."""
    return np.asarray(getattr(pd.Series(x).groupby(session), how)().to_numpy(), dtype=np.float64)


def previous_session_close(bars: Bars) -> np.ndarray:
    """[N] the last close of the session before each row's, in the same series (else NaN)."""
    first = session_first_row(bars.session)
    before = np.maximum(first - 1, 0)
    same_series = (first > 0) & (bars.series[before] == bars.series[first])
    return np.where(same_series, bars.close[before], np.nan)


def rolling_var(x: np.ndarray, window: int) -> np.ndarray:
    """Sample variance over full windows of values centred near 0 (returns), from cumulative
    sums: (sum x^2 - (sum x)^2 / w) / (w - 1); not for values far from 0 (prices)."""
    return variance(Rolling(x), Rolling(x * x), window)


def variance(values: Rolling, squares: Rolling, window: int) -> np.ndarray:
    """`rolling_var` of x from `Rolling(x)` and `Rolling(x * x)`, kept for several windows."""
    total, sum_squares = values.sum(window), squares.sum(window)
    return np.maximum(sum_squares - total * total / window, 0.0) / (window - 1)


def root(x: np.ndarray) -> np.ndarray:
    """sqrt of a variance that rounding may have left a hair below 0 (NaN stays NaN)."""
    return np.sqrt(np.maximum(x, 0.0))


def safe_divide(num: np.ndarray, den: np.ndarray, fill: float = 0.0) -> np.ndarray:
    """num / den where den != 0, else `fill` (NaN stays NaN)."""
    out = np.full(np.broadcast(num, den).shape, fill)
    np.divide(num, den, out=out, where=den != 0)
    return np.where(np.isnan(num) | np.isnan(den), np.nan, out)
