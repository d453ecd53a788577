"""Volatility spillover, when the bars hold several symbols: how the other symbols are moving
in their own volatility. For a row of symbol s at time t, the as-of mean over the fresh other
symbols o (cross.py: o's last bar at or before t, no older than the session gap) of

    cross_surge_w   sqrt(mean r^2 over o's last w bars) / sqrt(mean r^2 over its last 4 w)

1 when o moves as it has lately, up to 2 (the last w bars hold all of the 4 w bars' moves),
0 when it stopped; 1 over 4 w flat bars. Scale-free, so a quiet leader's burst and a busy
one's read alike: cross_vol (cross.py) holds the same moves in units of return, which a
network must first divide by the leader's own level (issue 39: the planted cross lead was not
learned from it). NaN while a fresh other symbol is in its warm-up (4 w bars); 0 with none
fresh.
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, Rolling, per_series, root, safe_divide, write_columns
from foxhunt.data.features.cross import others_mean
from foxhunt.data.features.group import Group, windowed

#: the longer window's length, in short windows
LONG = 4


def surges(bars: Bars, windows: tuple[int, ...]) -> np.ndarray:
    """[N, W] each row's own short-over-long RMS ratio of returns, per series."""

    def one(rows: slice) -> list[np.ndarray]:
        r = bars.returns[rows]
        squares = Rolling(r * r)
        return [
            safe_divide(root(squares.mean(w)), root(squares.mean(LONG * w)), fill=1.0)
            for w in windows
        ]

    own = np.empty((len(bars.close), len(windows)))
    per_series(bars, own, one)
    return own


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    others, _ = others_mean(bars, surges(bars, windows))
    write_columns(out, list(others.T))


GROUP = Group(
    name="spillover",
    summary="other symbols' moves in their own volatility (as-of, fresh ones only)",
    windows=(1, 3, 12),
    columns=windowed("spillover", ("cross_surge",), lambda w: LONG * w),
    compute=compute,
    cross=True,
)
