"""`foxhunt inspect FILE`: what is in a bars file, before training on it (docs/calendars.md)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxhunt.cli.common import data_section
from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, generated_command, resolve
from foxhunt.config_fields import setting

if TYPE_CHECKING:
    import pandas as pd

    from foxhunt.data.calendar import Calendar


@dataclass(frozen=True, kw_only=True)
class InspectOptions:
    """The file and what to say about it.

    Attributes:
        file: OHLCV bars: a .parquet or .csv file, or a folder or glob of Parquet.
        features: list every model input (name, group, window, warm-up) instead of the
            summary (the data section's feature_groups, or a train --preset's).
        json: print the summary (or the listing) as JSON.
    """

    file: Path | None = setting(None, positional=True)
    features: bool = False
    json: bool = False


#: what inspect reads of the data section (the windows, the calendar, the inputs)
FIELDS = ("timezone", "timestamp_column", "calendar", "contract_column", "lookback", "horizon")


def command() -> Command:
    from foxhunt.cli.presets import preset

    sections = (data_section(*FIELDS, "feature_groups"), Section("", InspectOptions))
    return generated_command(
        "foxhunt inspect",
        "Summarize a bars file before training on it: sessions, gaps, windows "
        "(docs/calendars.md); --features lists every model input. --preset NAME takes a "
        "train preset's windows and feature groups.",
        sections,
        presets=preset,
        required=("file",),
    )


def register(sub: Any) -> None:
    add_command(sub, "inspect", "summarize a bars file: sessions, gaps, windows", run)


def run(line: argparse.Namespace) -> int:
    args = resolve(command(), line.argv)[1]
    # imported once the line is parsed: --help needs none of them
    from foxhunt.data.calendar_setting import parse_calendar, resolve_calendar
    from foxhunt.data.contracts import find_contract_column
    from foxhunt.data.inspect import inspect_bars
    from foxhunt.data.sources import read_source
    from foxhunt.data.validate import validate_bars

    data = args.data
    chosen = parse_calendar(data.calendar, "--calendar")
    source = str(args.file)
    raw = read_source(args.file, timezone=data.timezone, timestamp_column=data.timestamp_column)
    column = find_contract_column(raw, data.contract_column, source)
    frame = validate_bars(raw, source=source, min_rows=1, contract_column=column)
    calendar = resolve_calendar(chosen, frame["symbol"].unique(), source)
    if args.features:
        listing = feature_listing(data.feature_groups, calendar, frame, column)
        print(json.dumps(listing, indent=2) if args.json else render_listing(listing))
        return 0
    report = inspect_bars(
        frame,
        calendar=calendar,
        lookback=data.lookback,
        horizon=data.horizon,
        contract_column=column,
    )
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0


def feature_listing(
    groups: tuple[str, ...], calendar: Calendar, frame: pd.DataFrame, contract_column: str | None
) -> list[dict[str, Any]]:
    """Every input of the chosen feature spec: name, kind, group, window, warm-up; the groups
    checked against the validated bars `frame` as `train` checks them (the same lines)."""
    from dataclasses import replace

    import numpy as np
    from pandas import factorize

    from foxhunt.data.config import DataConfig
    from foxhunt.data.contracts import contract_series_starts
    from foxhunt.data.features import FeatureSpec, parse_groups
    from foxhunt.data.features.compute import check_cross, row_contracts
    from foxhunt.data.features.fitting import check_groups

    config = DataConfig(feature_groups=tuple(groups))
    spec = FeatureSpec(
        config.volatility_windows, calendar=calendar, groups=parse_groups(config.feature_groups)
    )
    check_cross(frame["symbol"].to_numpy(), spec)
    codes = factorize(frame["symbol"])[0]
    series = np.cumsum(contract_series_starts(codes, frame, contract_column)) - 1
    check_groups(spec, series_codes=series, contract_column=contract_column)
    row_contracts(frame, replace(spec, contract_column=contract_column))  # names read as train
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
