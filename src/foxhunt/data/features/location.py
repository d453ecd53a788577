"""Where the close sits against its session; c the log close, sessions as in bars.py:

vwap_dist        c - log(session VWAP so far), VWAP of (h + l + c) / 3 weighted by v + 1
high_dist        c - log(session high so far);  low_dist  c - log(session low so far)
prev_close_dist  c - log(last close of the previous session)   (NaN in a series' first)
session_gap      log(session's first open / previous session's last close): the overnight
                 or weekend gap, the same all session                (NaN as prev_close)
or_high_dist_k, or_low_dist_k  c - log(high / low of the session's first k bars; before
                 the k-th bar, of the bars so far),  or_width_k  their log ratio
"""

from __future__ import annotations

import numpy as np

from foxhunt.data.features.bars import (
    Bars,
    previous_session_close,
    session_cumulative,
    session_first_row,
    write_columns,
)
from foxhunt.data.features.group import Column, Group, windowed

_SESSION = ("vwap_dist", "high_dist", "low_dist", "prev_close_dist", "session_gap")


def columns(windows: tuple[int, ...]) -> list[Column]:
    first = [Column(n, "location", None, "0 bars") for n in _SESSION[:3]]
    prev = [Column(n, "location", None, "1 session") for n in _SESSION[3:]]
    stems = ("or_high_dist", "or_low_dist", "or_width")
    return [*first, *prev, *windowed("location", stems, lambda w: 0)(windows)]


def compute(bars: Bars, windows: tuple[int, ...], out: np.ndarray) -> None:
    c, session = bars.log_close, bars.session
    weight = bars.volume + 1.0  # zero-volume bars after a reopen still have a price
    typical = (bars.high + bars.low + bars.close) / 3
    vwap = session_cumulative(typical * weight, session, "cumsum") / session_cumulative(
        weight, session, "cumsum"
    )
    high = session_cumulative(bars.high, session, "cummax")
    low = session_cumulative(bars.low, session, "cummin")
    prev = np.log(previous_session_close(bars))
    first = session_first_row(session)
    columns = [c - np.log(vwap), c - np.log(high), c - np.log(low), c - prev]
    columns.append(np.log(bars.open[first]) - prev)
    position = np.arange(len(c)) - first  # bars since the session's first
    for k in windows:
        inside = position < k  # the opening range is still forming
        or_high = session_cumulative(np.where(inside, bars.high, -np.inf), session, "cummax")
        or_low = session_cumulative(np.where(inside, bars.low, np.inf), session, "cummin")
        columns += [c - np.log(or_high), c - np.log(or_low), np.log(or_high / or_low)]
    write_columns(out, columns)


GROUP = Group(
    name="location",
    summary="distance to the session VWAP, high, low, previous close; gap; opening range",
    windows=(6, 12, 24),
    columns=columns,
    compute=compute,
)
