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

from foxhunt.data.features.bars import Bars, Rolling, per_series, root, safe_divide
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("rv", "bv", "rs_up", "rs_down", "jump")


def columns(windows: tuple[int, ...]) -> list[Column]:
    plain = windowed("realized", _STEMS)(windows)
    later = windowed("realized", _STEMS, lambda w: w + 1)(windows)
    return [
        a if a.name.startswith(("rv_", "rs_")) else b for a, b in zip(plain, later, strict=True)
    ]


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    def one(rows: slice) -> list[np.ndarray]:
        r = bars.returns[rows]
        square = r * r
        pairs = np.abs(r) * np.abs(np.concatenate([[np.nan], r[:-1]]))
        up, down = np.where(r > 0, square, 0.0), np.where(r < 0, square, 0.0)
        up[np.isnan(r)] = down[np.isnan(r)] = np.nan
        sums = [Rolling(x) for x in (square, pairs, up, down)]
        columns = []
        for w in windows:
            rv = sums[0].mean(w)
            bv = np.pi / 2 * sums[1].mean(w)
            jump = np.maximum(1.0 - safe_divide(bv, rv, 1.0), 0.0)
            columns += [root(rv), root(bv), root(sums[2].mean(w)), root(sums[3].mean(w)), jump]
        return columns

    per_series(bars, out, one)


GROUP = Group(
    name="realized",
    summary="realized volatility, bipower variation, semivariances and jump share",
    windows=(3, 6, 12, 24, 48, 78, 138, 276, 552, 1380),
    columns=columns,
    compute=compute,
    min_window=2,
)
