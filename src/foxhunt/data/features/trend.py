"""Trend and mean reversion over spans s of a series' log closes c:

ema_dist_s  c - log(EMA_s(close)), EMA with alpha 2 / (s + 1), NaN for the first s bars
rsi_s       Wilder's RSI - 50: 100 G / (G + L) - 50 with G, L the exponential averages
            (alpha 1 / s) of the bar's gains and losses; 0 when G + L = 0
zscore_s    (c - mean c) / std c over the last s bars; 0 when the std is 0
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, ewm_mean, per_series, rolling, safe_divide
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("ema_dist", "rsi", "zscore")
#: a std of log closes below this is rounding residue, not movement (a tick of the E-mini is
#: about 5e-5 in log price): the closes are equal and the z-score is 0, as documented,
#: whatever rows pandas' rolling std had summed before (issue 41's row blocks start later)
FLAT = 1e-9


def columns(windows: tuple[int, ...]) -> list[Column]:
    return windowed("trend", _STEMS, lambda s: s + 1)(windows)


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    log_close = bars.log_close

    def one(rows: slice) -> list[np.ndarray]:
        c, r = log_close[rows], bars.returns[rows]
        gains, losses = np.where(r > 0, r, 0.0), np.where(r < 0, -r, 0.0)
        gains[np.isnan(r)] = losses[np.isnan(r)] = np.nan
        columns = []
        for s in windows:
            ema = np.log(ewm_mean(bars.close[rows], span=s))
            g, loss = ewm_mean(gains, alpha=1 / s), ewm_mean(losses, alpha=1 / s)
            rsi = 100 * safe_divide(g, g + loss, 0.5) - 50
            std = rolling(c, s, "std")
            std[std < FLAT] = 0.0  # equal closes: pandas' running sums leave a residue
            z = safe_divide(c - rolling(c, s, "mean"), std)
            ema[: s + 1] = rsi[: s + 1] = z[: s + 1] = np.nan  # one warm-up for all three
            columns += [c - ema, rsi, z]
        return columns

    per_series(bars, out, one)


GROUP = Group(
    name="trend",
    summary="distance to EMAs, RSI and z-score oscillators",
    windows=(6, 12, 24, 48, 96, 192, 288, 576, 1152),
    columns=columns,
    compute=compute,
    min_window=2,
)
