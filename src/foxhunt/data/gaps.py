"""Gaps between consecutive bars, classed by the exchange calendar (docs/calendars.md).

A gap is a time between two bars of a symbol longer than the bar spacing. It is *scheduled*
when the calendar closes in it and at most `TOLERATED_MISSING` bars of trading time are
missing around that closure (thin trading leaves the first bars after a reopen empty):

    break    the daily maintenance break (CME: 17:00-18:00 ET)
    weekend  a closure over a Saturday
    holiday  a closure after a holiday-shortened session, or over a weekday with no session
             (ranked first: Good Friday is both a holiday and a weekend)

Any other gap is *unexplained*: bars missing inside a session, or more trading time missing
than a reopen explains. Without a calendar every gap is "unclassified".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from foxhunt.data.calendar import Sessions

KINDS = ("break", "weekend", "holiday", "unexplained")
TOLERATED_MISSING = 3  # bars of trading time a scheduled closure may lack at its edges


@dataclass(frozen=True)
class Gaps:
    """The gaps of one symbol's bars, in order."""

    start_ns: np.ndarray  # [G] the bar before the gap
    end_ns: np.ndarray  # [G] the bar after it
    kind: np.ndarray  # [G] str: one of KINDS, or "unclassified" without a calendar
    missing_bars: np.ndarray  # [G] int: bar starts the calendar trades in the gap (-1: none)


def closure_kinds(sessions: Sessions) -> tuple[np.ndarray, np.ndarray]:
    """[S-1] bool each: the closure after session k is a holiday, is a weekend."""
    days = sessions.dates
    business = np.busday_count(days[:-1], days[1:])  # weekdays from one date to the next
    calendar_days = (days[1:] - days[:-1]).astype(np.int64)
    holiday = sessions.early[:-1] | (business > 1)
    weekend = calendar_days > business
    return holiday, weekend


def find_gaps(times_ns: np.ndarray, spacing_ns: int, sessions: Sessions | None) -> Gaps:
    """The gaps of one symbol's sorted bar starts, classed by `sessions` when given."""
    at = np.flatnonzero(np.diff(times_ns) > spacing_ns)
    start, end = times_ns[at], times_ns[at + 1]
    if sessions is None:
        kind = np.full(len(at), "unclassified", dtype=object)
        return Gaps(start, end, kind, np.full(len(at), -1))
    missing = (sessions.clock(end) - sessions.clock(start) - spacing_ns) // spacing_ns
    missing = np.maximum(missing, 0)
    first, last = sessions.locate(start), sessions.locate(end)  # closures k in [first, last)
    holiday, weekend = closure_kinds(sessions)
    holidays = np.concatenate([[0], np.cumsum(holiday)])
    weekends = np.concatenate([[0], np.cumsum(weekend)])
    closed = last > first
    kind = np.where(
        holidays[last] > holidays[first],
        "holiday",
        np.where(weekends[last] > weekends[first], "weekend", "break"),
    ).astype(object)
    kind[~closed | (missing > TOLERATED_MISSING)] = "unexplained"
    return Gaps(start, end, kind, missing.astype(np.int64))
