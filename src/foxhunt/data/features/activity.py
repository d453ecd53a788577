"""Trading activity; v the bar's volume, r its log return, c its close, h, l its high, low:

volume_vs_minute  log(1 + v) - typical log(1 + v) of the symbol at this minute of day
                  (the median over the training rows only, data/features/fitting.py)
clv               ((c - l) - (h - c)) / (h - l), 0 when h = l    close location value
log_volume_w      log(1 + mean v over w bars)
rel_volume_w      log(1 + v) - mean log(1 + v) over w bars
amihud_w          log((sum |r| + 1e-10) / (sum c v + 1)) over w bars   Amihud illiquidity
NaN for the first w bars of a series (amihud: its first return is NaN).
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, Rolling, per_series, safe_divide
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("log_volume", "rel_volume", "amihud")


def columns(windows: tuple[int, ...]) -> list[Column]:
    return [
        Column("volume_vs_minute", "activity", None, "0 bars"),
        Column("clv", "activity", None, "0 bars"),
        *windowed("activity", _STEMS)(windows),
    ]


def typical_volume(bars: Bars) -> np.ndarray:
    """[N] the fitted typical log volume at each row's symbol and minute (NaN: unfitted)."""
    out = np.full(len(bars.volume), np.nan)
    for symbol, table in bars.volume_profile.items():
        mine = bars.symbols == symbol
        out[mine] = table[bars.minute[mine]]
    return out


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    log_volume = np.log1p(bars.volume)
    bar_range = bars.high - bars.low
    dollars = bars.close * bars.volume

    def one(rows: slice) -> list[np.ndarray]:
        moves = np.abs(bars.returns[rows])
        logs, volume = Rolling(log_volume[rows]), Rolling(bars.volume[rows])
        move_sums, dollar_sums = Rolling(moves), Rolling(dollars[rows])
        columns = []
        for w in windows:
            illiquid = (move_sums.sum(w) + 1e-10) / (dollar_sums.sum(w) + 1)
            level, relative = np.log1p(volume.mean(w)), log_volume[rows] - logs.mean(w)
            level[:w] = relative[:w] = np.nan  # the warm-up of amihud (its first return
            columns += [level, relative, np.log(illiquid)]  # is NaN), for all three
        return columns

    out[:, 0] = log_volume - typical_volume(bars)
    out[:, 1] = safe_divide((bars.close - bars.low) - (bars.high - bars.close), bar_range)
    per_series(bars, out[:, 2:], one)


GROUP = Group(
    name="activity",
    summary="volume against its minute of day, volume windows, Amihud illiquidity, CLV",
    windows=(3, 6, 12, 24, 48, 78, 138, 276, 552, 1380),
    columns=columns,
    compute=compute,
    fitted=True,
)
