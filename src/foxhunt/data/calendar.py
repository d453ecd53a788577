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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

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


#: a run's resolved calendar: one name for every symbol, (symbol, name) pairs for symbols on
#: different calendars (a symbol not listed has none), or None (no calendar)
Calendar: TypeAlias = str | tuple[tuple[str, str], ...] | None


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
    found = resolve_calendar(AUTO, symbols, source)
    return found if isinstance(found, str) else None


def parse_calendar(setting: str | Mapping[str, str], what: str = "DataConfig.calendar") -> str:
    """A calendar setting checked and in its canonical text: "auto", "none", a name, or a
    per-symbol mapping (a dict, or "ES=CME Globex Equity,CL=CMEGlobex_Crude") as sorted
    "SYMBOL=NAME" pairs; a pair's NAME may be "none" (no calendar for that symbol)."""
    if isinstance(setting, Mapping):
        pairs = [(str(k), v) for k, v in setting.items()]
    elif isinstance(setting, str) and "=" in setting:
        items = [item.split("=", 1) for item in setting.split(",") if item.strip()]
        pairs = [(k, v) for k, v in items]
    else:
        check_calendar_name(setting, what)  # a non-string is refused there
        return setting
    for symbol, name in pairs:
        if not symbol.strip() or not isinstance(name, str) or name.strip() == AUTO:
            raise ConfigError(
                f"{what}={setting!r}: each entry must be SYMBOL=NAME with NAME a "
                "pandas_market_calendars name or none, e.g. 'ES=CME Globex Equity,CL=CMEGlobex_Crude'"
            )
        check_calendar_name(name.strip(), f"{what}[{symbol.strip()!r}]")
    table = {k.strip(): v.strip() for k, v in pairs}
    if len(table) < len(pairs):
        raise ConfigError(f"{what}={setting!r}: a symbol is named twice; name each once")
    return ",".join(f"{k}={v}" for k, v in sorted(table.items()))


def setting_table(setting: str) -> dict[str, str] | None:
    """The per-symbol mapping of a canonical setting ("none" values kept), else None."""
    if "=" not in setting:
        return None
    return {k: v for k, _, v in (item.partition("=") for item in setting.split(","))}


def resolve_calendar(setting: str, symbols: Iterable[str], source: str) -> Calendar:
    """A DataConfig.calendar setting -> the run's `Calendar` for the file's `symbols`.

    "auto" infers each symbol's calendar from its root; a mapping names some (by symbol or
    root) and infers the rest. One warning names the symbols left without a calendar.
    """
    if setting == NONE:
        return None
    table = setting_table(setting)
    if setting != AUTO and table is None:
        return setting
    symbols = sorted(set(symbols))
    table = table or {}
    unknown = sorted(set(table) - set(symbols) - {symbol_root(s) for s in symbols})
    if unknown:
        raise ConfigError(
            f"{source}: DataConfig.calendar names symbols {unknown} that the file does not "
            f"hold (its symbols: {symbols}); name only those"
        )
    named = {s: table.get(s, table.get(symbol_root(s))) for s in symbols}
    found = {
        s: None if n == NONE else n or SYMBOL_CALENDARS.get(symbol_root(s))
        for s, n in named.items()
    }
    without = [s for s, n in found.items() if n is None and named[s] is None]
    if without:
        log.warning(
            "%s: no exchange calendar for symbols %s (known: %s); their forecast times are "
            "extrapolated and their session features are 0; pass --calendar NAME (e.g. %r), "
            "SYMBOL=NAME,... or --calendar none",
            source,
            without,
            ", ".join(sorted(SYMBOL_CALENDARS)),
            CME_EQUITY,
        )
    names = set(found.values())
    if len(names) == 1:  # one calendar (or none) for all: saved as before per-symbol calendars
        name = names.pop()
        if name is not None:
            log.info("%s: calendar %r for symbols %s", source, name, symbols)
        return name
    pairs = tuple((s, n) for s, n in found.items() if n is not None)
    log.info("%s: calendars per symbol %s", source, dict(pairs))
    return pairs


def calendar_for(calendar: Calendar, symbol: str) -> str | None:
    """The calendar of one symbol's bars."""
    if calendar is None or isinstance(calendar, str):
        return calendar
    return dict(calendar).get(symbol)


def calendar_rows(calendar: Calendar, symbols: np.ndarray | None) -> list[tuple[str, np.ndarray]]:
    """(calendar name, [n] row indices) of each calendar the rows use; `symbols` is the [N]
    symbol of each row (needed only for per-symbol calendars)."""
    if calendar is None:
        return []
    if isinstance(calendar, str):
        return [(calendar, np.arange(len(symbols) if symbols is not None else 0))]
    if symbols is None:
        raise ValueError("per-symbol calendars need the symbol of each row")
    out = []
    for name in sorted({n for _, n in calendar}):
        wanted = [s for s, n in calendar if n == name]
        rows = np.flatnonzero(np.isin(np.asarray(symbols, dtype=object), wanted))
        if len(rows):
            out.append((name, rows))
    return out


def calendar_to_json(calendar: Calendar) -> str | dict[str, str] | None:
    return dict(calendar) if isinstance(calendar, tuple) else calendar


def calendar_from_json(value: object, what: str) -> Calendar:
    """A saved calendar (None, a name, or a symbol -> name dict), checked."""
    if value is None:
        return None
    if isinstance(value, dict):
        for symbol, name in value.items():
            check_calendar_name(name, f"{what}[{symbol!r}]")
        return tuple(sorted((str(k), str(v)) for k, v in value.items()))
    check_calendar_name(value, what)  # type: ignore[arg-type]
    return str(value)


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


def session_features(
    calendar: Calendar, times_ns: np.ndarray, symbols: np.ndarray | None = None
) -> np.ndarray:
    """[N, 3] `Sessions.features` at the given UTC ns times, each row on its symbol's calendar
    (`symbols`: [N] names, needed for per-symbol calendars); rows without one get 0."""
    out = np.zeros((len(times_ns), len(SESSION_FEATURES)))
    if len(times_ns) == 0:
        return out
    if isinstance(calendar, str):  # every row: as before per-symbol calendars
        return sessions_for(calendar, times_ns).features(times_ns)
    for name, rows in calendar_rows(calendar, symbols):
        out[rows] = sessions_for(name, times_ns[rows]).features(times_ns[rows])
    return out


def gap_clock(
    times_ns: np.ndarray,
    calendar: Calendar,
    cross_breaks: bool,
    symbols: np.ndarray | None = None,
) -> np.ndarray:
    """The times that gaps are measured on: trading time of each row's calendar (scheduled
    closures removed) when windows may cross scheduled breaks, else wall-clock time. Only
    differences within a symbol's rows are meaningful; rows without a calendar keep theirs."""
    if calendar is None or not cross_breaks or len(times_ns) == 0:
        return times_ns
    if isinstance(calendar, str):
        return sessions_for(calendar, times_ns).clock(times_ns)
    out = times_ns.copy()
    for name, rows in calendar_rows(calendar, symbols):
        out[rows] = sessions_for(name, times_ns[rows]).clock(times_ns[rows])
    return out
