"""Range-based volatility estimators over the last w bars (per-bar units, as volatilities);
with o, h, l, c the bar's log open, high, low, close:

    parkinson_w  sqrt(mean (h - l)^2 / (4 ln 2))
    gk_w         sqrt(max(mean 0.5 (h - l)^2 - (2 ln 2 - 1)(c - o)^2, 0))   Garman-Klass
    rs_w         sqrt(max(mean (h - c)(h - o) + (l - c)(l - o), 0))         Rogers-Satchell
    yz_w         sqrt(max(var(o_t - c_{t-1}) + k var(c - o) + (1 - k) RS, 0))  Yang-Zhang,
                 k = 0.34 / (1.34 + (w + 1) / (w - 1)), sample variances over w bars
    NaN for the first w bars of a series (yz's first overnight return needs a previous close).
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, per_series, rolling, rolling_var, root
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("parkinson", "gk", "rs", "yz")


def columns(windows: tuple[int, ...]) -> list[Column]:
    return windowed("ranges", _STEMS)(windows)


def compute(bars: Bars, windows: tuple[int, ...]) -> np.ndarray:
    o, h, lo, c = (np.log(x) for x in (bars.open, bars.high, bars.low, bars.close))
    spread = (h - lo) ** 2
    body = (c - o) ** 2
    rs_bar = (h - c) * (h - o) + (lo - c) * (lo - o)

    def one(rows: slice) -> np.ndarray:
        overnight = o[rows] - np.concatenate([[np.nan], c[rows][:-1]])
        out = []
        for w in windows:
            parkinson = rolling(spread[rows], w, "mean") / (4 * np.log(2))
            gk = rolling(0.5 * spread[rows] - (2 * np.log(2) - 1) * body[rows], w, "mean")
            rs = rolling(rs_bar[rows], w, "mean")
            k = 0.34 / (1.34 + (w + 1) / (w - 1))
            yz = rolling_var(overnight, w) + k * rolling_var(c[rows] - o[rows], w)
            yz = yz + (1 - k) * rs
            parkinson[:w] = gk[:w] = rs[:w] = np.nan  # the warm-up of yz, for all four
            out += [root(x) for x in (parkinson, gk, rs, yz)]
        return np.column_stack(out)

    return per_series(bars, len(_STEMS) * len(windows), one)


GROUP = Group(
    name="ranges",
    summary="Parkinson, Garman-Klass, Rogers-Satchell and Yang-Zhang volatility",
    windows=(3, 6, 12, 24, 48, 78, 138, 276, 552, 1380),
    columns=columns,
    compute=compute,
    min_window=2,
)
