"""`foxhunt inspect FILE`: what is in a bars file, before training on it (docs/calendars.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("inspect", help="summarize a bars file: sessions, gaps, windows")
    p.add_argument(
        "file",
        type=Path,
        help="OHLCV bars: a .parquet or .csv file, or a folder or glob of Parquet",
    )
    p.add_argument("--timezone", default=None, help="timezone of naive timestamps")
    p.add_argument("--timestamp-column", default=None, help="name of the time column")
    p.add_argument(
        "--calendar",
        default="auto",  # data.calendar.AUTO: imported with pandas, which --help needs not
        help='exchange calendar: "auto" (from the symbols), "none", a pandas_market_calendars '
        "name, or one per symbol: ES=NAME,CL=NAME (docs/calendars.md)",
    )
    p.add_argument(
        "--contract-column",
        default="auto",
        help='column naming each bar\'s contract: "auto" (contract or expiry), a name, or "none"',
    )
    p.add_argument("--lookback", type=int, default=64, help="bars of history per window")
    p.add_argument("--horizon", type=int, default=8, help="bars to forecast")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from foxhunt.data.calendar_setting import parse_calendar, resolve_calendar
    from foxhunt.data.contracts import find_contract_column
    from foxhunt.data.inspect import inspect_bars
    from foxhunt.data.sources import read_source
    from foxhunt.data.validate import validate_bars

    setting = parse_calendar(args.calendar, "--calendar")
    source = str(args.file)
    raw = read_source(args.file, timezone=args.timezone, timestamp_column=args.timestamp_column)
    wanted = None if str(args.contract_column).lower() == "none" else args.contract_column
    column = find_contract_column(raw, wanted, source)
    frame = validate_bars(raw, source=source, min_rows=1, contract_column=column)
    calendar = resolve_calendar(setting, frame["symbol"].unique(), source)
    report = inspect_bars(
        frame,
        calendar=calendar,
        lookback=args.lookback,
        horizon=args.horizon,
        contract_column=column,
    )
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def render(report: dict[str, Any], indent: str = "") -> str:
    """The summary as indented `key: value` lines."""
    lines = []
    for key, value in report.items():
        if isinstance(value, dict) and value:
            lines += [f"{indent}{key}:", render(value, indent + "  ")]
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            lines.append(f"{indent}{key}:")
            lines += [f"{indent}  - " + ", ".join(f"{k} {v}" for k, v in v.items()) for v in value]
        else:
            lines.append(f"{indent}{key}: {value}")
    return "\n".join(lines)
