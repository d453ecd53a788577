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

from foxhunt.data.features.bars import Bars, per_series, rolling, safe_divide
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


def compute(bars: Bars, windows: tuple[int, ...]) -> np.ndarray:
    log_volume = np.log1p(bars.volume)
    bar_range = bars.high - bars.low
    clv = safe_divide((bars.close - bars.low) - (bars.high - bars.close), bar_range)
    dollars = bars.close * bars.volume

    def one(rows: slice) -> np.ndarray:
        moves = np.abs(bars.returns[rows])
        out = []
        for w in windows:
            mean_log = rolling(log_volume[rows], w, "mean")
            illiquid = (rolling(moves, w, "sum") + 1e-10) / (rolling(dollars[rows], w, "sum") + 1)
            block = np.column_stack(
                [np.log1p(rolling(bars.volume[rows], w, "mean")), log_volume[rows] - mean_log]
            )
            block[:w] = np.nan  # the warm-up of amihud (its first return is NaN), for all
            out += [block, np.log(illiquid)[:, None]]
        return np.concatenate(out, axis=1)

    windowed_part = per_series(bars, len(_STEMS) * len(windows), one)
    return np.column_stack([log_volume - typical_volume(bars), clv, windowed_part])


GROUP = Group(
    name="activity",
    summary="volume against its minute of day, volume windows, Amihud illiquidity, CLV",
    windows=(3, 6, 12, 24, 48, 78, 138, 276, 552, 1380),
    columns=columns,
    compute=compute,
    fitted=True,
)
