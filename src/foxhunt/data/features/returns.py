"""Returns over several horizons and since the session open.

ret_h        log(close_t / close_{t-h})                      (NaN for a series' first h bars)
ret_session  log(close_t / open of the session's first bar)  (a session: see bars.py)
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import Bars, per_series, session_first_row
from foxhunt.data.features.group import Column, Group, windowed


def columns(windows: tuple[int, ...]) -> list[Column]:
    return [
        *windowed("returns", ("ret",))(windows),
        Column("ret_session", "returns", None, "0 bars"),
    ]


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    log_close = bars.log_close

    def one(rows: slice) -> list[np.ndarray]:
        x = log_close[rows]
        columns = []
        for h in windows:
            ret = np.full(len(x), np.nan)
            ret[h:] = x[h:] - x[:-h]
            columns.append(ret)
        return columns

    per_series(bars, out[:, : len(windows)], one)
    out[:, len(windows)] = log_close - np.log(bars.open[session_first_row(bars.session)])


GROUP = Group(
    name="returns",
    summary="log returns over h bars and since the session open",
    windows=(3, 6, 12, 24, 48, 96, 144, 192, 288, 576),
    columns=columns,
    compute=compute,
)
