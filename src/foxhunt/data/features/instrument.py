"""Static instrument descriptors, one set per symbol, fitted on its training rows (group
"instrument"). OHLCV bars name no tick size, point value or asset class, so these stand in
for them, measured from the bars:

    log_tick_rel       log(smallest positive step between distinct prices / median close)
    log_price          log(median close)
    log_dollar_volume  log(1 + median close x volume per bar)
    log_bar_vol        log(std of one-bar log returns + 1e-12)
Fed as static inputs next to the symbol, standardized across the run's symbols (with one
symbol every one is 0: the symbol embedding alone tells symbols apart).
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.group import Column, Group

NAMES = ("log_tick_rel", "log_price", "log_dollar_volume", "log_bar_vol")


def describe(close: np.ndarray, volume: np.ndarray, returns: np.ndarray) -> tuple[float, ...]:
    """The four descriptors of one symbol's training bars."""
    prices = np.unique(close)
    steps = np.diff(prices)
    steps = steps[steps > 0]
    median = float(np.median(close))
    tick = float(steps.min()) if len(steps) else median
    bar_vol = float(np.nanstd(returns)) if np.isfinite(returns).any() else 0.0
    dollars = float(np.median(close * volume))
    return (
        float(np.log(tick / median)),
        float(np.log(median)),
        float(np.log1p(dollars)),
        float(np.log(bar_vol + 1e-12)),
    )


def static_table(
    descriptors: tuple[tuple[str, tuple[float, ...]], ...], symbols: tuple[str, ...]
) -> np.ndarray:
    """[S, 4] float32 descriptors of each symbol code, standardized across symbols; a symbol
    with none fitted (no training rows) gets the mean."""
    fitted = dict(descriptors)
    raw = np.asarray([fitted[s] for s in fitted], dtype=np.float64).reshape(-1, len(NAMES))
    mean, std = raw.mean(axis=0), raw.std(axis=0)
    std = np.where(std > 1e-12, std, 1.0)
    rows = [np.asarray(fitted.get(s, mean)) for s in symbols]
    return ((np.stack(rows) - mean) / std).astype(np.float32)


GROUP = Group(
    name="instrument",
    summary="static descriptors per symbol: tick, price level, dollar volume, volatility",
    windows=(),
    columns=lambda w: [Column(n, "instrument", None, "fitted on train") for n in NAMES],
    compute=lambda bars, w, out: None,  # no per-row inputs: static_table
    static=True,
)
