"""`foxhunt inspect FILE`: what is in a bars file, before training on it (docs/calendars.md)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxhunt.errors import ConfigError

if TYPE_CHECKING:
    from foxhunt.data.calendar import Calendar


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
    p.add_argument(
        "--features",
        action="store_true",
        help="list every model input (name, group, window, warm-up) instead of the summary",
    )
    p.add_argument(
        "--preset", default=None, help="with --features: the inputs of this train preset"
    )
    p.add_argument(
        "--feature-groups",
        default=None,
        help="with --features: groups as for train, e.g. returns,realized:12/78 (docs/data.md)",
    )
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
    if args.features:
        listing = feature_listing(args, calendar, frame["symbol"].nunique())
        print(json.dumps(listing, indent=2) if args.json else render_listing(listing))
        return 0
    report = inspect_bars(
        frame,
        calendar=calendar,
        lookback=args.lookback,
        horizon=args.horizon,
        contract_column=column,
    )
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def feature_listing(
    args: argparse.Namespace, calendar: Calendar, symbols: int
) -> list[dict[str, Any]]:
    """Every input of the chosen feature spec: name, kind, group, window, warm-up."""
    from foxhunt.cli.presets import preset
    from foxhunt.data.config import DataConfig
    from foxhunt.data.features import FeatureSpec, parse_groups

    data = preset(args.preset).get("data", {}) if args.preset else {}
    groups = data.get("feature_groups", ())
    if args.feature_groups is not None:
        groups = [g for g in args.feature_groups.split(",") if g.strip()]
    config = DataConfig(feature_groups=tuple(groups))
    spec = FeatureSpec(config.volatility_windows, calendar=calendar, groups=parse_groups(groups))
    if symbols < 2 and any(g.cross for g, _ in spec.observed_groups):
        raise ConfigError(
            "--feature-groups: group 'cross' needs several symbols and the file holds one"
        )
    observed, static = set(spec.observed_names), set(spec.static_names)
    rows = [{"name": "symbol", "kind": "static", "group": "symbol", "window": None, "warmup": "-"}]
    for column in spec.columns():
        kind = (
            "static"
            if column.name in static
            else "observed"
            if column.name in observed
            else "known"
        )
        rows.append({**asdict(column), "kind": kind})
    return rows


def render_listing(rows: list[dict[str, Any]]) -> str:
    counts = {k: sum(r["kind"] == k for r in rows) for k in ("static", "observed", "known")}
    lines = [f"{'input':<22} {'kind':<9} {'group':<14} {'window':>7}  warm-up"]
    for r in rows:
        window = "-" if r["window"] is None else r["window"]
        lines.append(f"{r['name']:<22} {r['kind']:<9} {r['group']:<14} {window:>7}  {r['warmup']}")
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items()) + " inputs")
    return "\n".join(lines)


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
