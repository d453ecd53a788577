"""The shape of the last w returns r and closes c of a series:

skew_w      sqrt(w) sum r^3 / (sum r^2)^(3/2)   realized skewness (0 when sum r^2 = 0)
kurt_w      w sum r^4 / (sum r^2)^2             realized kurtosis (0 when sum r^2 = 0)
drawdown_w  c_t - max c over w bars (<= 0);  drawup_w  c_t - min c over w bars (>= 0)
NaN for the first w bars of a series.
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, Rolling, per_series, rolling, safe_divide
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("skew", "kurt", "drawdown", "drawup")


def columns(windows: tuple[int, ...]) -> list[Column]:
    return windowed("shape", _STEMS)(windows)


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    log_close = bars.log_close

    def one(rows: slice) -> list[np.ndarray]:
        r, c = bars.returns[rows], log_close[rows]
        square = r * r
        # r**p with an integer p is slower
        powers = [Rolling(p) for p in (square, square * r, square * square)]
        columns = []
        for w in windows:
            s2, s3, s4 = (p.sum(w) for p in powers)
            s2 = np.maximum(s2, 0.0)  # a hair below 0 after rounding would make s2**1.5 NaN
            high, low = rolling(c, w, "max"), rolling(c, w, "min")
            high[:w] = low[:w] = np.nan  # the same warm-up as the return-based ones
            columns += [np.sqrt(w) * safe_divide(s3, s2**1.5), w * safe_divide(s4, s2 * s2)]
            columns += [c - high, c - low]
        return columns

    per_series(bars, out, one)


GROUP = Group(
    name="shape",
    summary="realized skewness and kurtosis, drawdown and drawup",
    windows=(3, 6, 12, 24, 48, 78, 138, 276, 552, 1380),
    columns=columns,
    compute=compute,
    min_window=2,
)
