"""Cross-instrument inputs, when the bars hold several symbols. For a row of symbol s at time
t and each other symbol o, o's last bar at or before t (an as-of join: never a later bar):

    cross_ret_w   mean over the other symbols of their log return over w bars
    cross_vol_w   mean over the other symbols of their realized volatility sqrt(mean r^2), w bars
    rel_strength_w  s's own w-bar log return - cross_ret_w
    Each symbol's own measures are computed within its series (symbol / contract); NaN until
    every other symbol has a bar with them (their warm-up, w bars).
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, Rolling, per_series, root, write_columns
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("cross_ret", "cross_vol", "rel_strength")


def columns(windows: tuple[int, ...]) -> list[Column]:
    return windowed("cross", _STEMS)(windows)


def own_measures(bars: Bars, windows: tuple[int, ...]) -> np.ndarray:
    """[N, 2 W]: each row's own w-bar log return and realized volatility, per series."""

    log_close = bars.log_close  # a property: np.log(close) each time

    def one(rows: slice) -> list[np.ndarray]:
        c, r = log_close[rows], bars.returns[rows]
        squares = Rolling(r * r)
        columns = []
        for w in windows:
            ret = np.full(len(c), np.nan)
            ret[w:] = c[w:] - c[:-w]
            columns += [ret, root(squares.mean(w))]
        return columns

    own = np.empty((len(bars.close), 2 * len(windows)))
    per_series(bars, own, one)
    return own


def as_of(times_ns: np.ndarray, values: np.ndarray, at_ns: np.ndarray) -> np.ndarray:
    """values [n, k] (rows of one symbol) at its last time <= each of `at_ns` (else NaN)."""
    order = np.argsort(times_ns, kind="stable")  # contracts of a symbol may overlap in time
    position = np.searchsorted(times_ns[order], at_ns, side="right") - 1
    out = values[order][np.maximum(position, 0)]
    out[position < 0] = np.nan
    return out


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    own = own_measures(bars, windows)
    names = np.unique(bars.symbols)
    total = np.zeros_like(own)
    for name in names:
        mine = bars.symbols == name
        joined = as_of(bars.times_ns[mine], own[mine], bars.times_ns)  # [N, 2 W]
        joined[mine] = 0.0  # a row's own symbol is not one of the others
        total += joined
    others = total / (len(names) - 1)  # NaN while any other symbol is in its warm-up
    columns = []
    for j in range(len(windows)):
        ret, vol = others[:, 2 * j], others[:, 2 * j + 1]
        columns += [ret, vol, own[:, 2 * j] - ret]
    write_columns(out, columns)


GROUP = Group(
    name="cross",
    summary="other symbols' returns and volatility (as-of) and relative strength",
    windows=(1, 12, 48, 276),
    columns=columns,
    compute=compute,
    cross=True,
)
