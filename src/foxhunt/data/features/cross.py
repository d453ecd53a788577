"""Cross-instrument inputs, when the bars hold several symbols. For a row of symbol s at time
t and each other symbol o, o's last bar at or before t (an as-of join: never a later bar),
counted only while it is fresh: no older than the session gap (a step that long starts a
session, bars.py), so a symbol in its daily break, over a weekend or no longer trading is
left out rather than held at its last values for hours:

    cross_ret_w     mean over the fresh other symbols of their log return over w bars
    cross_vol_w     mean over the fresh other symbols of their realized volatility
                    sqrt(mean r^2) over w bars
    rel_strength_w  s's own w-bar log return - cross_ret_w
    cross_fresh     the share of the other symbols that are fresh at t (0 .. 1)
    Each symbol's own measures are computed within its series (symbol / contract). NaN while
    a fresh other symbol is in its warm-up (w bars); with none fresh, cross_ret and cross_vol
    are 0 (and cross_fresh says so).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from foxhunt.data.features.bars import (
    Bars,
    OtherSymbols,
    Rolling,
    per_series,
    root,
    write_columns,
)
from foxhunt.data.features.group import Column, Group, windowed

_STEMS = ("cross_ret", "cross_vol", "rel_strength")


def columns(windows: tuple[int, ...]) -> list[Column]:
    return [*windowed("cross", _STEMS)(windows), Column("cross_fresh", "cross", None, "0 bars")]


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


def as_of(
    times_ns: np.ndarray, values: np.ndarray, at_ns: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """values [n, k] (rows of one symbol) at its last time <= each of `at_ns` (else NaN), and
    that time (else the int64 minimum)."""
    order = np.argsort(times_ns, kind="stable")  # contracts of a symbol may overlap in time
    position = np.searchsorted(times_ns[order], at_ns, side="right") - 1
    out = values[order][np.maximum(position, 0)]
    out[position < 0] = np.nan
    when = np.where(position < 0, np.iinfo(np.int64).min, times_ns[order][position])
    return out, when


#: one symbol's times [n], its measures [n, k], and the rows [N] that are its own (to which
#: it is not one of the others)
Source = tuple[np.ndarray, np.ndarray, np.ndarray]


def others_mean(bars: Bars, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[N, k] the mean over the fresh other symbols of their `own` [N, k] measures as of each
    row (0 where none is fresh, NaN while one is in its warm-up), and [N] the share of the
    other symbols that are fresh."""
    names, codes = np.unique(bars.symbols, return_inverse=True)
    mines = (codes == code for code in range(len(names)))
    sources = ((bars.times_ns[mine], own[mine], mine) for mine in mines)
    return _fresh_mean(bars, sources, len(names), own.shape[1])


def others_alone(bars: Bars, others: OtherSymbols, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`others_mean` for the rows of one symbol computed alone, from the other symbols'
    files: the same sums in the same order (the symbols sorted), so the same numbers."""
    mine, none = str(bars.symbols[0]), np.zeros(len(bars.times_ns), dtype=bool)

    def sources() -> Iterator[Source]:
        for name, file in zip(others.names, others.files, strict=True):
            if name != mine:
                with np.load(file) as saved:  # one other symbol's at a time
                    yield saved["times_ns"], saved["own"], none

    return _fresh_mean(bars, sources(), len(others.names), k)


def _fresh_mean(
    bars: Bars, sources: Iterable[Source], symbols: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """`others_mean` of the measures `sources` give, symbol by symbol, of `symbols` in all."""
    total = np.zeros((len(bars.times_ns), k))
    fresh_count = np.zeros(len(bars.times_ns))
    for times_ns, values, own_rows in sources:
        joined, when = as_of(times_ns, values, bars.times_ns)  # [N, k]
        # a row's own symbol is not one of the others; an old bar is not news
        fresh = ~own_rows & (when >= bars.times_ns - bars.gap_ns)
        total[fresh] += joined[fresh]
        fresh_count += fresh
    others = np.zeros_like(total)  # 0 where no other symbol is fresh
    seen = fresh_count > 0
    others[seen] = total[seen] / fresh_count[seen, None]  # NaN while one is in its warm-up
    return others, fresh_count / (symbols - 1)


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    own = own_measures(bars, windows)
    if bars.others is None:
        others, fresh = others_mean(bars, own)
    else:
        others, fresh = others_alone(bars, bars.others, own.shape[1])
    columns = []
    for j in range(len(windows)):
        ret, vol = others[:, 2 * j], others[:, 2 * j + 1]
        columns += [ret, vol, own[:, 2 * j] - ret]
    write_columns(out, [*columns, fresh])


GROUP = Group(
    name="cross",
    summary="other symbols' returns and volatility (as-of, fresh ones only), relative strength",
    windows=(1, 12, 48, 276),
    columns=columns,
    compute=compute,
    cross=True,
)
