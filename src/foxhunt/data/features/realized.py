"""Realized measures of the last w one-bar log returns r (HAR-like windows), per-bar units:

rv_w        sqrt(sum r^2 / w)                                 realized volatility
bv_w        sqrt(pi/2 * sum |r_i| |r_{i-1}| / w)              bipower variation (as a vol)
rs_up_w     sqrt(sum r^2 [r > 0] / w)                         upside semivariance (as a vol)
rs_down_w   sqrt(sum r^2 [r < 0] / w)                         downside semivariance
jump_w      max(1 - BV/RV, 0) in variance units (0 when RV = 0)  the jump share
NaN for the first w bars of a series (w + 1 for bv and jump: two returns per product).
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, per_series, rolling, root, safe_divide
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("rv", "bv", "rs_up", "rs_down", "jump")


def columns(windows: tuple[int, ...]) -> list[Column]:
    plain = windowed("realized", _STEMS)(windows)
    later = windowed("realized", _STEMS, lambda w: w + 1)(windows)
    return [
        a if a.name.startswith(("rv_", "rs_")) else b for a, b in zip(plain, later, strict=True)
    ]


def compute(bars: Bars, windows: tuple[int, ...]) -> np.ndarray:
    def one(rows: slice) -> np.ndarray:
        r = bars.returns[rows]
        square = r * r
        pairs = np.abs(r) * np.abs(np.concatenate([[np.nan], r[:-1]]))
        up, down = np.where(r > 0, square, 0.0), np.where(r < 0, square, 0.0)
        up[np.isnan(r)] = down[np.isnan(r)] = np.nan
        out = []
        for w in windows:
            rv = rolling(square, w, "mean")
            bv = np.pi / 2 * rolling(pairs, w, "mean")
            jump = np.maximum(1.0 - safe_divide(bv, rv, 1.0), 0.0)
            semi = (rolling(up, w, "mean"), rolling(down, w, "mean"))
            out += [root(rv), root(bv), root(semi[0]), root(semi[1]), jump]
        return np.column_stack(out)

    return per_series(bars, len(_STEMS) * len(windows), one)


GROUP = Group(
    name="realized",
    summary="realized volatility, bipower variation, semivariances and jump share",
    windows=(3, 6, 12, 24, 48, 78, 138, 276, 552, 1380),
    columns=columns,
    compute=compute,
    min_window=2,
)
