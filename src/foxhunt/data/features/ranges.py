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

from foxhunt.data.features.bars import Bars, Rolling, per_series, root, variance
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("parkinson", "gk", "rs", "yz")


def columns(windows: tuple[int, ...]) -> list[Column]:
    return windowed("ranges", _STEMS)(windows)


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    o, h, lo, c = (np.log(x) for x in (bars.open, bars.high, bars.low, bars.close))
    spread = (h - lo) ** 2
    gk_bar = 0.5 * spread - (2 * np.log(2) - 1) * (c - o) ** 2
    rs_bar = (h - c) * (h - o) + (lo - c) * (lo - o)

    def one(rows: slice) -> list[np.ndarray]:
        overnight = o[rows] - np.concatenate([[np.nan], c[rows][:-1]])
        body = c[rows] - o[rows]
        bar, gk_sums, rs_sums = (Rolling(x[rows]) for x in (spread, gk_bar, rs_bar))
        gaps, gap_squares = Rolling(overnight), Rolling(overnight * overnight)
        bodies, body_squares = Rolling(body), Rolling(body * body)
        columns = []
        for w in windows:
            parkinson = bar.mean(w) / (4 * np.log(2))
            gk, rs = gk_sums.mean(w), rs_sums.mean(w)
            k = 0.34 / (1.34 + (w + 1) / (w - 1))
            yz = variance(gaps, gap_squares, w) + k * variance(bodies, body_squares, w)
            yz = yz + (1 - k) * rs
            parkinson[:w] = gk[:w] = rs[:w] = np.nan  # the warm-up of yz, for all four
            columns += [root(x) for x in (parkinson, gk, rs, yz)]
        return columns

    per_series(bars, out, one)


GROUP = Group(
    name="ranges",
    summary="Parkinson, Garman-Klass, Rogers-Satchell and Yang-Zhang volatility",
    windows=(3, 6, 12, 24, 48, 78, 138, 276, 552, 1380),
    columns=columns,
    compute=compute,
    min_window=2,
)
