"""Synthetic bars made on an exchange calendar: one bar per `spacing` from each session's
open to its close (bar starts), a seeded random walk, nothing else missing."""

from __future__ import annotations

import numpy as np
import pandas as pd

from foxhunt.data.calendar import CME_EQUITY, load_sessions

NY = "America/New_York"


def calendar_bars(
    start: str,
    end: str,
    *,
    calendar: str = CME_EQUITY,
    spacing: str = "5min",
    seed: int = 0,
    symbol: str = "ES",
) -> pd.DataFrame:
    """Bars of every session of `calendar` opening in [start, end) (New York dates)."""
    lo, hi = (pd.Timestamp(t, tz=NY).value for t in (start, end))
    sessions = load_sessions(calendar, lo, hi)
    step = pd.Timedelta(spacing).value
    keep = (sessions.open_ns >= lo) & (sessions.open_ns < hi)
    starts = [
        np.arange(o, c, step, dtype=np.int64)
        for o, c in zip(sessions.open_ns[keep], sessions.close_ns[keep], strict=True)
    ]
    times = np.concatenate(starts)
    rng = np.random.default_rng(seed)
    close = 5000.0 * np.exp(np.cumsum(rng.normal(0.0, 5e-4, len(times))))
    open_ = np.concatenate([[5000.0], close[:-1]])
    wiggle = np.abs(rng.normal(0.0, 3e-4, len(times)))
    return pd.DataFrame(
        {
            "timestamp": pd.DatetimeIndex(times).tz_localize("UTC").tz_convert(NY),
            "open": open_,
            "high": np.maximum(open_, close) * (1 + wiggle),
            "low": np.minimum(open_, close) * (1 - wiggle),
            "close": close,
            "volume": rng.integers(1, 1000, len(times)).astype(np.float64),
            "symbol": symbol,
        }
    )
