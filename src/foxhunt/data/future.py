"""What a forecast knows of the bars it forecasts: their times (from the exchange calendar, or
extrapolated from the bar spacing without one) and the user's known columns at those times,
read from a future file, never invented."""

from __future__ import annotations

import numpy as np
import pandas as pd

from foxhunt.data.calendar import Calendar, calendar_for, sessions_for
from foxhunt.data.validate import drop_duplicate_bars
from foxhunt.errors import DataError


def forecast_times(
    last_ns: np.ndarray,
    *,
    spacing_ns: int,
    horizon: int,
    calendar: Calendar,
    symbols: tuple[str, ...] = (),
) -> np.ndarray:
    """[B, H] int64 UTC ns of the next `horizon` bars after each last bar (of `symbols[b]`,
    needed for per-symbol calendars): on the symbol's calendar the next bar starts inside
    its sessions (skipping breaks, weekends, holidays and the time after an early close),
    without one `spacing_ns` steps."""
    out = last_ns[:, None] + np.arange(1, horizon + 1, dtype=np.int64) * spacing_ns
    if calendar is None or len(last_ns) == 0:
        return out
    names = [calendar_for(calendar, s) for s in symbols] if isinstance(calendar, tuple) else None
    for name in {calendar} if isinstance(calendar, str) else set(names or ()) - {None}:
        rows = [b for b in range(len(last_ns)) if names is None or names[b] == name]
        sessions = sessions_for(str(name), last_ns[rows])
        out[rows] = np.stack(
            [sessions.next_bars(int(last_ns[b]), spacing_ns, horizon) for b in rows]
        )
    return out


def future_known_values(
    future: pd.DataFrame | None,
    columns: tuple[str, ...],
    symbols: tuple[str, ...],
    times_ns: np.ndarray,
) -> np.ndarray:
    """[B*H, K] the known columns at each forecast bar (symbol-major), from `future`'s rows
    (matched by symbol and timestamp; a file without a symbol column serves every symbol).

    Raises DataError when known columns exist and `future` is None, or lacks a row, a column or
    a finite value: a known input is never held at its last value or otherwise made up.
    """
    if not columns:
        return np.zeros((times_ns.size, 0))
    if future is None:
        raise DataError(
            f"known columns {list(columns)} need their values at the {times_ns.shape[1]} "
            "forecast bars: pass them with predict --future-file FILE (timestamp[, symbol], "
            f"{', '.join(columns)}; one row per forecast bar)"
        )
    source = str(future.attrs.get("source", "the future file"))
    missing = [c for c in columns if c not in future.columns]
    if missing:
        raise DataError(f"{source}: known columns {missing} not found; add them to the file")
    shared = set(future["symbol"].unique()) == {"default"}  # no symbol column: for every symbol
    unique = drop_duplicate_bars(future, source)  # a bar given twice, differently: refused
    keys = unique["timestamp"].dt.tz_convert("UTC").dt.as_unit("ns").astype("int64")
    table = unique.assign(_ns=keys.to_numpy(), _symbol="default" if shared else unique["symbol"])
    table = table.set_index(["_symbol", "_ns"])
    out = np.empty((times_ns.size, len(columns)))
    for b, symbol in enumerate(symbols):
        wanted = pd.MultiIndex.from_arrays(
            [["default" if shared else symbol] * times_ns.shape[1], times_ns[b]]
        )
        found = wanted.isin(table.index)
        if not found.all():
            when = pd.Timestamp(int(times_ns[b][~found][0]), tz="UTC")
            tz = future["timestamp"].dt.tz
            raise DataError(
                f"{source}: no row for symbol {symbol!r} at {when.tz_convert(tz)}, a forecast "
                f"bar; the file needs the known columns at all {times_ns.shape[1]} forecast "
                f"bars: {[str(pd.Timestamp(int(t), tz='UTC').tz_convert(tz)) for t in times_ns[b]]}"
            )
        try:
            values = table.loc[wanted, list(columns)].to_numpy(dtype=np.float64)
        except (ValueError, TypeError):
            values = np.full((len(wanted), len(columns)), np.nan)  # text: refused below
        if not np.isfinite(values).all():
            raise DataError(
                f"{source}: known columns {list(columns)} hold a value that is not a finite "
                f"number at a forecast bar of {symbol!r}; fix the file"
            )
        out[b * times_ns.shape[1] : (b + 1) * times_ns.shape[1]] = values
    return out
