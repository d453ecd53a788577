"""The volatility baseline a desk already runs, as per-row inputs of the model's scale.

Intraday volatility has a strong minute-of-day shape (the cash open, the close, the quiet
overnight), so the baseline's standard deviation of the return of bar t+h, forecast at t, is

    base_vol[t] * profile(minute of t+h)
    base_vol[t] = RMS of the last `window` returns / profile(minute), up to and including t

`IntradayProfile` is fitted on training rows only; `causal_rms` never looks ahead and never
reaches back into another symbol's series.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

#: Pseudo-bars at the overall mean |return| that shrink each bucket toward 1: a bucket seen
#: on ~40 training days moves about 80% of the way to its own mean.
DEFAULT_SHRINKAGE = 10.0
MINUTES_PER_DAY = 1440


def minute_of_day(times: pd.DatetimeIndex, timezone: str | None = None) -> np.ndarray:
    """[N] int64 minute of day (0..1439) in local time of `timezone` (None: the times' own)."""
    local = times.tz_convert(timezone) if timezone and times.tz is not None else times
    return (local.hour.to_numpy() * 60 + local.minute.to_numpy()).astype(np.int64)


@dataclass(frozen=True, eq=False)
class IntradayProfile:
    """Relative volatility per minute-of-day bucket; its training mean square is 1."""

    bucket_minutes: int
    #: [1440 // bucket_minutes (rounded up)] float64, 1.0 = never seen; or [S, that] with one
    #: curve per symbol code (instruments with their own sessions and shapes)
    values: np.ndarray

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IntradayProfile):
            return NotImplemented
        same = np.array_equal(self.values, other.values)
        return self.bucket_minutes == other.bucket_minutes and same

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def fit(
        cls,
        returns: np.ndarray,
        minutes: np.ndarray,
        *,
        bucket_minutes: int,
        shrinkage: float = DEFAULT_SHRINKAGE,
    ) -> IntradayProfile:
        """From the training rows' log returns [N] and minutes of day [N] (NaN returns skipped).

        Per bucket the mean |return|, shrunk toward the overall mean: (sum |r| + k * mean |r|)
        / (count + k); then averaged 1-2-1 with its seen neighbouring buckets (the day is a
        circle), divided by the overall mean |r| and rescaled so its mean square over the
        training rows is exactly 1. Mean |r| rather than RMS: one crash bar weighs linearly in
        its bucket, not quadratically; on the ES bars it gives the baseline a ~1.5% lower
        validation loss (docs/forecasting.md).
        """
        bucket_minutes = max(1, int(bucket_minutes))
        size = -(-MINUTES_PER_DAY // bucket_minutes)
        keep = np.isfinite(returns)
        sizes, buckets = np.abs(returns[keep]).astype(np.float64), minutes[keep] // bucket_minutes
        overall = float(sizes.mean()) if len(sizes) else 0.0
        if overall <= 0.0:  # no returns, or flat prices: nothing to shape
            return cls(bucket_minutes, np.ones(size))
        sums = np.bincount(buckets, weights=sizes, minlength=size)
        counts = np.bincount(buckets, minlength=size)
        level = (sums + shrinkage * overall) / (counts + shrinkage) / overall  # [size]
        level = _smooth_seen(level, counts > 0)
        level /= float(np.sqrt(np.mean(level[buckets] ** 2)))  # mean square over training = 1
        level[counts == 0] = 1.0
        return cls(bucket_minutes, level)

    @classmethod
    def fit_per_symbol(
        cls,
        returns: np.ndarray,
        minutes: np.ndarray,
        codes: np.ndarray,
        *,
        symbols: int,
        bucket_minutes: int,
    ) -> IntradayProfile:
        """One curve per symbol code 0 .. symbols-1, each fitted on its own rows as `fit`
        does (a symbol without training rows gets the curve of all rows); one symbol: `fit`."""
        if symbols == 1:
            return cls.fit(returns, minutes, bucket_minutes=bucket_minutes)
        curves = []
        for code in range(symbols):
            mine = codes == code
            seen = mine.any() and np.isfinite(returns[mine]).any()
            fitted = cls.fit(returns[mine], minutes[mine], bucket_minutes=bucket_minutes)
            curves.append(fitted if seen else None)
        return cls.joined(
            curves, bucket_minutes, lambda: cls.fit(returns, minutes, bucket_minutes=bucket_minutes)
        )

    @classmethod
    def joined(
        cls,
        curves: list[IntradayProfile | None],
        bucket_minutes: int,
        pooled: Callable[[], IntradayProfile],
    ) -> IntradayProfile:
        """Per-symbol curves in one profile, a symbol without a finite training return
        (None) taking the `pooled` curve of all rows, fitted only then (streamed.py fits the
        symbols one at a time)."""
        shared = pooled().values if any(curve is None for curve in curves) else None
        values = [shared if curve is None else curve.values for curve in curves]
        return cls(max(1, int(bucket_minutes)), np.stack(values))  # type: ignore[arg-type]

    def __call__(self, minutes: np.ndarray, codes: np.ndarray | None = None) -> np.ndarray:
        """[N] relative volatility of bars at these minutes of day (of symbols `codes` [N],
        needed when the profile holds one curve per symbol)."""
        buckets = np.asarray(minutes, dtype=np.int64) // self.bucket_minutes
        if self.values.ndim == 1:
            return self.values[buckets]
        if codes is None:
            raise ValueError("a per-symbol intraday profile needs the rows' symbol codes")
        return self.values[np.asarray(codes, dtype=np.int64), buckets]

    def state_dict(self) -> dict[str, Any]:
        return {"bucket_minutes": self.bucket_minutes, "values": self.values.tolist()}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> IntradayProfile:
        values = np.asarray(state["values"], dtype=np.float64)
        return cls(int(state["bucket_minutes"]), values)


def _smooth_seen(level: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """1-2-1 average of each seen bucket with its seen neighbours, circularly."""
    weighted, weight = level * seen, seen.astype(np.float64)
    num = np.roll(weighted, 1) + 2 * weighted + np.roll(weighted, -1)
    den = np.roll(weight, 1) + 2 * weight + np.roll(weight, -1)
    return np.where(seen, num / np.maximum(den, 1.0), level)


#: |log ratio| cap of the fast-vs-base signal: e^4 ~ 55x, beyond any real regime change
SIGNAL_LIMIT = 4.0


def causal_rms(values: np.ndarray, window: int, series_starts: np.ndarray) -> np.ndarray:
    """[N] RMS of the finite values among values[t-window+1 .. t] for each row t, within its own
    series (rows are series after series); NaN until window // 2 finite values are behind it.
    A NaN (a return spanning a gap) is skipped rather than spoiling the next `window` rows."""
    series = np.cumsum(series_starts)
    squares = pd.Series(np.square(values))
    rolling = squares.groupby(series).rolling(window, min_periods=max(window // 2, 1))
    return np.sqrt(rolling.mean().to_numpy())


class BaseVolatility(Protocol):
    """A fitted volatility baseline standing in for the rolling RMS as the model's base
    (`baselines/base.py` builds one from a run's baseline.json; the data layer only calls it).

    `name` is the `DataConfig.base` it serves (never "auto" or "realized_vol")."""

    @property
    def name(self) -> str: ...

    def __call__(self, adjusted: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """[N] sd of the next return from each row, over its profile (the units of
        `adjusted`: log returns / profile, NaN where unusable), from rows up to it only;
        `codes` [N] each row's symbol code (rows are symbol after symbol, in time order)."""
        ...


@dataclass(frozen=True)
class BaselineRows:
    """Per-row inputs of the baseline scale, in scaled target units (log return / target
    scale): scale of the target at row t+h from anchor t = volatility[t] * profile[t+h]."""

    volatility: np.ndarray  # [N] float64, NaN in each series' warm-up
    profile: np.ndarray  # [N] float64
    #: [N] float64 log(fast volatility / volatility) at each row (0 where either is unknown
    #: or zero); None without a fast window
    signal: np.ndarray | None = None

    @property
    def ready(self) -> np.ndarray:
        """[N] bool: rows whose base volatility is known (may anchor a window)."""
        return np.isfinite(self.volatility)


def baseline_rows(
    returns: np.ndarray,
    minutes: np.ndarray,
    series_starts: np.ndarray,
    *,
    profile: IntradayProfile,
    window: int,
    target_scale: float,
    gaps: np.ndarray | None = None,
    fast_window: int = 0,
    codes: np.ndarray | None = None,
    base: BaseVolatility | None = None,
) -> BaselineRows:
    """Base volatility and profile of every row, both from data up to the row itself; returns
    spanning a gap (``gaps`` [N] True) are left out of the volatility, as from the profile.
    With `fast_window`, also the log ratio of a `fast_window`-bar RMS to the rolling one.

    With `base`, its volatility replaces the rolling RMS at every row where the rolling one
    is known (so every base shares the rolling warm-up, and with it the windows); NaN where
    `base` has none (a symbol it could not be fitted on). The signal stays fast / rolling."""
    relative = profile(minutes, codes)  # codes: each row's symbol, for per-symbol curves
    usable = returns if gaps is None else np.where(gaps, np.nan, returns)
    adjusted = usable / relative
    volatility = causal_rms(adjusted, window, series_starts) / target_scale
    signal = None
    if fast_window:
        fast = causal_rms(adjusted, fast_window, series_starts) / target_scale
        with np.errstate(divide="ignore", invalid="ignore"):
            signal = np.log(fast / volatility)
        # a flat stretch (zero volatility) or a warm-up says nothing: no lean either way
        signal = np.clip(np.where(np.isfinite(signal), signal, 0.0), -SIGNAL_LIMIT, SIGNAL_LIMIT)
    if base is not None:
        row_codes = np.zeros(len(returns), np.int64) if codes is None else codes
        chosen = np.asarray(base(adjusted, row_codes), dtype=np.float64) / target_scale
        volatility = np.where(np.isfinite(volatility), chosen, np.nan)
    return BaselineRows(volatility, relative, signal)
