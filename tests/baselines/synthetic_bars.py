"""Small synthetic bar returns with an intraday volatility shape, for the baseline tests."""

import numpy as np
import pandas as pd

from foxhunt.baselines import BarReturns


def make_bars(days: int = 30, seed: int = 0, symbols: int = 1) -> BarReturns:
    """5-minute bars 09:30..15:55 ET on weekdays; vol is U-shaped over the day; first 60% train."""
    rng = np.random.default_rng(seed)
    days_index = pd.bdate_range("2026-03-02", periods=days, tz="America/New_York")
    day_times = pd.timedelta_range("09:30:00", "15:55:00", freq="5min")
    times = pd.DatetimeIndex([d + t for d in days_index for t in day_times])
    x = np.linspace(-1, 1, len(day_times))
    shape = np.tile(1.0 + 1.5 * x**2, days)  # wide at the open and the close
    blocks, codes = [], []
    for code in range(symbols):
        r = rng.standard_t(5, size=len(times)) * shape * (3.0 + code)
        r[0] = np.nan  # no return before a series' first bar
        blocks.append(r)
        codes.append(np.full(len(times), code))
    returns = np.concatenate(blocks)
    all_times = times.append([times] * (symbols - 1)) if symbols > 1 else times
    train = np.tile(np.arange(len(times)) < int(0.6 * len(times)), symbols)
    return BarReturns(
        times=all_times,
        returns_bp=returns,
        symbol_codes=np.concatenate(codes).astype(np.int64),
        usable=np.isfinite(returns),
        train=train,
    )
