"""Exchange trading sessions (pandas_market_calendars, docs/calendars.md): which bar times
trade, the session features known in advance, the next bars that will really trade, and a
"trading clock" that skips scheduled closures.

Bars are labeled by their start (the ES bars: the last bar of a session is 16:55 ET, the first
after the 17:00-18:00 ET break is 18:00), so a bar at t trades iff open <= t < close of a
session. All arithmetic is on int64 UTC nanoseconds; sessions come from the library once per
(calendar, date range) and are cached.
"""

from __future__ import annotations

import functools
import logging
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from foxhunt.errors import ConfigError

log = logging.getLogger("foxhunt.data")

NONE, AUTO = "none", "auto"
CME_EQUITY = "CME Globex Equity"
CME_CRUDE = "CMEGlobex_Crude"
CME_RATES = "CME Globex Interest Rate Products"
#: calendar of each known root symbol (a contract such as ESM6 uses its root's)
SYMBOL_CALENDARS = {
    **dict.fromkeys(("ES", "MES", "NQ", "MNQ", "RTY", "M2K", "YM", "MYM"), CME_EQUITY),
    **dict.fromkeys(("CL", "MCL"), CME_CRUDE),
    **dict.fromkeys(("ZN", "ZB", "ZF", "ZT", "UB", "TN"), CME_RATES),
}
#: session features known in advance, fed after the clock features (features.CALENDAR)
SESSION_FEATURES = ("minutes_to_close", "minutes_since_open", "early_close")
_CONTRACT = re.compile(r"^([A-Z0-9]{1,3}?)[FGHJKMNQUVXZ]\d{1,2}$")  # ESM6, ESZ25 -> ES
_NS_PER_MINUTE = 60_000_000_000
_PAD = pd.Timedelta(days=10)  # sessions loaded around the bars: a long weekend plus margin
_AHEAD = pd.Timedelta(days=40)  # and after them, for the forecast bars


def calendar_names() -> list[str]:
    import pandas_market_calendars as pmc  # slow to import: only when a calendar is used

    return sorted(pmc.get_calendar_names())


def check_calendar_name(name: str, what: str = "DataConfig.calendar") -> None:
    """ConfigError unless `name` is "auto", "none" or a pandas_market_calendars name."""
    if name in (AUTO, NONE):
        return
    if not isinstance(name, str) or name not in calendar_names():
        raise ConfigError(
            f"{what}={name!r}: not a known exchange calendar; use auto, none or a "
            f"pandas_market_calendars name such as {CME_EQUITY!r} (docs/calendars.md)"
        )


def symbol_root(symbol: str) -> str:
    match = _CONTRACT.match(symbol.upper())
    return match.group(1) if match and symbol.upper() not in SYMBOL_CALENDARS else symbol.upper()


def infer_calendar(symbols: Iterable[str], source: str) -> str | None:
    """The calendar every symbol maps to, or None (with a warning saying how to set one)."""
    symbols = sorted(set(symbols))
    found = {SYMBOL_CALENDARS.get(symbol_root(s)) for s in symbols}
    if len(found) == 1 and None not in found:
        name = found.pop()
        log.info("%s: calendar %r inferred from symbols %s", source, name, symbols)
        return name
    log.warning(
        "%s: no exchange calendar for symbols %s (known: %s); forecast times are extrapolated "
        "and no session features are used; pass --calendar NAME (e.g. %r) or --calendar none",
        source,
        symbols,
        ", ".join(sorted(SYMBOL_CALENDARS)),
        CME_EQUITY,
    )
    return None


def resolve_calendar(setting: str, symbols: Iterable[str], source: str) -> str | None:
    """A DataConfig.calendar setting ("auto", "none", a name) -> a calendar name or None."""
    if setting == NONE:
        return None
    if setting == AUTO:
        return infer_calendar(symbols, source)
    return setting


@dataclass(frozen=True)
class Sessions:
    """Consecutive sessions of one calendar, as UTC ns, sorted."""

    name: str
    open_ns: np.ndarray  # [S] int64
    close_ns: np.ndarray  # [S] int64
    dates: np.ndarray  # [S] datetime64[D]: the trading date of each session
    early: np.ndarray  # [S] bool: a holiday-shortened session (an early close)

    def locate(self, times_ns: np.ndarray) -> np.ndarray:
        """[N] index of the first session closing after each time (clipped to the last)."""
        found = np.searchsorted(self.close_ns, times_ns, side="right")
        return np.minimum(found, len(self.close_ns) - 1)

    def trading(self, times_ns: np.ndarray) -> np.ndarray:
        """[N] bool: a bar starting at the time lies inside a session."""
        i = self.locate(times_ns)
        return (times_ns >= self.open_ns[i]) & (times_ns < self.close_ns[i])

    def features(self, times_ns: np.ndarray) -> np.ndarray:
        """[N, 3] minutes to the session close, minutes since its open, early-close flag.

        A time outside every session (a bar the calendar does not expect) gets those of the
        next session: its minutes since the open are 0.
        """
        i = self.locate(times_ns)
        to_close = (self.close_ns[i] - times_ns) / _NS_PER_MINUTE
        since_open = np.maximum(times_ns - self.open_ns[i], 0) / _NS_PER_MINUTE
        return np.stack([to_close, since_open, self.early[i].astype(np.float64)], axis=1)

    def clock(self, times_ns: np.ndarray) -> np.ndarray:
        """[N] int64 trading time since the first session: scheduled closures take none."""
        length = self.close_ns - self.open_ns
        before = np.concatenate([[0], np.cumsum(length)[:-1]])
        i = self.locate(times_ns)
        return before[i] + np.clip(times_ns - self.open_ns[i], 0, length[i])

    def next_bars(self, last_ns: int, spacing_ns: int, count: int) -> np.ndarray:
        """[count] int64 starts of the next bars after `last_ns` that fall inside sessions:
        `spacing_ns` apart within a session, the first at each later session's open."""
        out: list[int] = []
        t = last_ns + spacing_ns
        while len(out) < count:
            i = int(self.locate(np.asarray([t]))[0])
            if t >= self.close_ns[i]:  # past the loaded sessions
                raise ConfigError(
                    f"calendar {self.name!r} has no session after "
                    f"{pd.Timestamp(t, tz='UTC')}; update pandas_market_calendars"
                )
            if t < self.open_ns[i]:
                t = int(self.open_ns[i])  # closed: the next session's first bar
            out.append(t)
            t += spacing_ns
        return np.asarray(out, dtype=np.int64)


def load_sessions(name: str, start_ns: int, end_ns: int) -> Sessions:
    """Sessions of calendar `name` from a little before `start_ns` to well after `end_ns`."""
    start = (pd.Timestamp(start_ns, tz="UTC") - _PAD).strftime("%Y-%m-%d")
    end = (pd.Timestamp(end_ns, tz="UTC") + _AHEAD).strftime("%Y-%m-%d")
    return _load(name, start, end)


@functools.lru_cache(maxsize=16)
def _load(name: str, start: str, end: str) -> Sessions:
    import pandas_market_calendars as pmc

    calendar = pmc.get_calendar(name)
    with warnings.catch_warnings():  # its notes on break times we do not use
        warnings.simplefilter("ignore")
        schedule = calendar.schedule(start, end)
        early = schedule.index.isin(calendar.early_closes(schedule).index)
    if schedule.empty:
        raise ConfigError(f"calendar {name!r} has no sessions between {start} and {end}")
    return Sessions(
        name=name,
        open_ns=_utc_ns(schedule["market_open"]),
        close_ns=_utc_ns(schedule["market_close"]),
        dates=schedule.index.to_numpy().astype("datetime64[D]"),
        early=np.asarray(early, dtype=bool),
    )


def _utc_ns(column: pd.Series) -> np.ndarray:
    return pd.DatetimeIndex(column).tz_convert("UTC").as_unit("ns").asi8.copy()


def sessions_for(name: str, times_ns: np.ndarray) -> Sessions:
    return load_sessions(name, int(times_ns.min()), int(times_ns.max()))


def session_features(name: str, times_ns: np.ndarray) -> np.ndarray:
    """[N, 3] `Sessions.features` of calendar `name` at the given UTC ns times."""
    if len(times_ns) == 0:
        return np.zeros((0, len(SESSION_FEATURES)))
    return sessions_for(name, times_ns).features(times_ns)


def gap_clock(times_ns: np.ndarray, name: str | None, cross_breaks: bool) -> np.ndarray:
    """The times that gaps are measured on: trading time (scheduled closures removed) when
    windows may cross scheduled breaks, else wall-clock time."""
    if name is None or not cross_breaks or len(times_ns) == 0:
        return times_ns
    return sessions_for(name, times_ns).clock(times_ns)
