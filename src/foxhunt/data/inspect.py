"""`inspect_bars`: the data summary a researcher reads before training (`foxhunt inspect`).

Plain JSON values only. With a contract column: the contracts of each symbol and the rolls
a back-adjusted series would make (data/contracts.py), every contract its own series for the
gaps and windows; without one: the suspect jumps at session boundaries (data/jumps.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from foxhunt.data.calendar import Calendar, Sessions, calendar_for, gap_clock, sessions_for
from foxhunt.data.calendar_setting import calendar_to_json
from foxhunt.data.contracts import contract_rolls
from foxhunt.data.fit import resolve_max_gap
from foxhunt.data.gaps import KINDS, find_gaps
from foxhunt.data.jumps import suspect_jumps
from foxhunt.data.windows import index_windows, median_spacing_ns

#: the --max-gap settings whose windows are counted, besides "auto" and "none"
MAX_GAP_CHOICES = ("10min", "30min", "2h")
_EXAMPLES = 10  # gaps and off-calendar bars listed by time


def inspect_bars(
    frame: pd.DataFrame,
    *,
    calendar: Calendar,
    lookback: int,
    horizon: int,
    contract_column: str | None = None,
) -> dict[str, Any]:
    """Summary of validated bars (sorted by symbol, time; by symbol, contract, time with a
    contract column) under `calendar` (None: no calendar; per-symbol calendars: sessions per
    symbol, each symbol's gaps classed by its own)."""
    times = pd.DatetimeIndex(frame["timestamp"])
    tz = str(times.tz)
    times_ns = times.as_unit("ns").asi8
    series = frame["symbol"].astype(str)
    if contract_column is not None:  # each contract its own series, as training splits them
        series = series + "\x00" + frame[contract_column].astype(str)
    codes = pd.factorize(series.to_numpy())[0].astype(np.int64)
    spacing = median_spacing_ns(codes, times_ns)
    symbols = frame["symbol"].astype(str).to_numpy()
    sessions = sessions_for(calendar, times_ns) if isinstance(calendar, str) else None
    by_symbol: dict[str, Sessions | None] = {}  # per-symbol calendars: each symbol's sessions
    if isinstance(calendar, tuple):
        for symbol in pd.unique(symbols):
            name, rows = calendar_for(calendar, symbol), symbols == symbol
            by_symbol[symbol] = None if name is None else sessions_for(name, times_ns[rows])
    first = np.flatnonzero(np.append(True, codes[1:] != codes[:-1]))  # first row of each series
    code_sessions = {
        int(codes[i]): by_symbol.get(symbols[i]) if by_symbol else sessions for i in first
    }
    report: dict[str, Any] = {
        "source": str(frame.attrs.get("source", "")),
        "rows": len(frame),
        "timezone": tz,
        "first": str(times.min()),
        "last": str(times.max()),
        "symbols": {str(k): int(v) for k, v in frame["symbol"].value_counts(sort=False).items()},
        "bar_spacing": str(pd.Timedelta(spacing, unit="ns")),
        "calendar": calendar_to_json(calendar),
    }
    if sessions is not None:
        report["sessions"] = _sessions(sessions, times_ns, tz)
    elif by_symbol:
        report["sessions"] = {
            symbol: _sessions(found, times_ns[symbols == symbol], tz)
            for symbol, found in by_symbol.items()
            if found is not None
        }
    report["gaps"] = _gaps(times_ns, codes, spacing, code_sessions, tz)
    if contract_column is not None:
        report["contracts"] = _contracts(frame, contract_column)
    else:
        report["suspect_jumps"] = _jumps(frame)
    report["zero_volume_bars"] = _zero_volume(frame, codes, times_ns, spacing)
    report["windows"] = _windows(codes, times_ns, spacing, calendar, symbols, lookback, horizon)
    return report


def _contracts(frame: pd.DataFrame, column: str) -> dict[str, Any]:
    """Each symbol's contracts (first and last bar) and the volume-crossover rolls between them."""
    spans = frame.groupby(["symbol", column], sort=False)["timestamp"].agg(["min", "max", "size"])
    listed: dict[str, list[dict[str, Any]]] = {}
    for key, row in spans.sort_values("min").iterrows():
        pair: tuple[Any, Any] = key  # type: ignore[assignment]  # (symbol, contract)
        listed.setdefault(str(pair[0]), []).append(
            {
                "contract": str(pair[1]),
                "first": str(row["min"]),
                "last": str(row["max"]),
                "bars": int(row["size"]),
            }
        )
    rolls = [
        {
            "symbol": r.symbol,
            "timestamp": str(r.timestamp),
            "from": r.old,
            "to": r.new,
            "gap_points": round(r.gap, 6),
            "ratio": round(r.ratio, 8),
        }
        for r in contract_rolls(frame, column)
    ]
    return {"column": column, "by_symbol": listed, "rolls": rolls}


def _jumps(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The suspect jumps at session boundaries (a roll a continuous series hides)."""
    return [
        {
            "symbol": j.symbol,
            "timestamp": str(j.timestamp),
            "after": str(j.previous),
            "return_bp": round(j.log_return * 1e4, 2),
            "robust_sigmas": round(j.sigmas, 1),
        }
        for j in suspect_jumps(frame)
    ]


def _stamp(ns: np.ndarray | int, tz: str) -> Any:
    if isinstance(ns, np.ndarray):
        return [_stamp(int(t), tz) for t in ns]
    return str(pd.Timestamp(int(ns), unit="ns", tz="UTC").tz_convert(tz))


def _sessions(sessions: Sessions, times_ns: np.ndarray, tz: str) -> dict[str, Any]:
    trading = sessions.trading(times_ns)
    index = sessions.locate(times_ns)
    span = (sessions.close_ns > times_ns.min()) & (sessions.open_ns <= times_ns.max())
    seen = np.unique(index[trading])
    early = np.flatnonzero(span & sessions.early)
    return {
        "in_span": int(span.sum()),
        "with_bars": len(seen),
        "early_closes": [str(d) for d in sessions.dates[early]],
        "off_calendar_bars": int((~trading).sum()),
        "off_calendar_examples": _stamp(times_ns[~trading][:_EXAMPLES], tz),
    }


def _gaps(
    times_ns: np.ndarray,
    codes: np.ndarray,
    spacing: int,
    sessions_of: dict[int, Sessions | None],
    tz: str,
) -> dict[str, Any]:
    """Gaps by kind, each series' classed by its own sessions (`sessions_of`, by series code)."""
    classed = any(s is not None for s in sessions_of.values())
    kinds = (*KINDS, *(("unclassified",) if None in sessions_of.values() else ()))
    counts: dict[str, int] = dict.fromkeys(kinds if classed else ("unclassified",), 0)
    unexplained: list[dict[str, Any]] = []
    missing = 0
    for code in np.unique(codes):
        rows = codes == code
        gaps = find_gaps(times_ns[rows], spacing, sessions_of[int(code)])
        for kind in counts:
            counts[kind] += int((gaps.kind == kind).sum())
        odd = np.flatnonzero(gaps.kind == "unexplained")
        missing += int(gaps.missing_bars[odd].sum())
        unexplained += [
            {
                "after": _stamp(int(gaps.start_ns[g]), tz),
                "before": _stamp(int(gaps.end_ns[g]), tz),
                "duration": str(pd.Timedelta(int(gaps.end_ns[g] - gaps.start_ns[g]), unit="ns")),
                "missing_bars": int(gaps.missing_bars[g]),
            }
            for g in odd
        ]
    out: dict[str, Any] = {"by_kind": counts}
    if classed:
        out["unexplained_missing_bars"] = missing
        largest = sorted(unexplained, key=lambda gap: -gap["missing_bars"])
        out["unexplained_examples"] = largest[:_EXAMPLES]  # the most missing bars first
    return out


def _zero_volume(
    frame: pd.DataFrame, codes: np.ndarray, times_ns: np.ndarray, spacing: int
) -> dict[str, int]:
    zero = frame["volume"].to_numpy() == 0
    after_gap = np.ones(len(zero), dtype=bool)  # a symbol's first bar, or one after a gap
    after_gap[1:] = (codes[1:] != codes[:-1]) | (np.diff(times_ns) > spacing)
    return {"total": int(zero.sum()), "after_a_gap": int((zero & after_gap).sum())}


def _windows(
    codes: np.ndarray,
    times_ns: np.ndarray,
    spacing: int,
    calendar: Calendar,
    symbols: np.ndarray,
    lookback: int,
    horizon: int,
) -> dict[str, int]:
    """Windows of lookback + horizon bars each --max-gap keeps (before the rolling warm-up)."""

    def count(setting: str | None, clock: np.ndarray) -> int:
        index = index_windows(
            codes,
            np.zeros(len(codes), dtype=np.int8),
            clock,
            np.ones(len(codes), dtype=bool),
            lookback=lookback,
            horizon=horizon,
            max_gap_ns=resolve_max_gap(setting, spacing),
        )
        return len(index.anchors["train"])

    out = {s or "none": count(s, times_ns) for s in ("auto", None, *MAX_GAP_CHOICES)}
    if calendar is not None:
        out["auto --cross-breaks"] = count("auto", gap_clock(times_ns, calendar, True, symbols))
    return out
