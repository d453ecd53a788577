"""DataConfig.calendar settings: "auto", "none", one pandas_market_calendars name, or one per
symbol ("ES=CME Globex Equity,CL=CMEGlobex_Crude"), resolved against a file's symbols to the
run's `Calendar`, and that calendar as saved in preprocessor.json (docs/calendars.md)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from foxhunt.data.calendar import (
    AUTO,
    CME_EQUITY,
    NONE,
    SYMBOL_CALENDARS,
    Calendar,
    check_calendar_name,
    symbol_root,
)
from foxhunt.errors import ConfigError

log = logging.getLogger("foxhunt.data")


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
