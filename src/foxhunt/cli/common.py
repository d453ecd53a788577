"""Arguments and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import math
from collections.abc import Collection
from pathlib import Path
from types import ModuleType

import pandas as pd

from foxhunt.data.io import read_normalized
from foxhunt.errors import FoxhuntError


def csv_tuple(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def float_tuple(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in csv_tuple(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}"
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers, got {text!r}")
    return values


def add_data_file_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    group = parser.add_argument_group("data file")
    group.add_argument(
        "--parquet-file",
        "--csv-file",
        "--data-file",
        dest="data_file",
        type=Path,
        required=required,
        help="OHLCV bars (.parquet or .csv): timestamp, open, high, low, close, volume[, symbol]",
    )
    group.add_argument(
        "--timezone", default=None, help="timezone of naive timestamps (e.g. America/New_York)"
    )
    group.add_argument(
        "--timestamp-column", default=None, help="name of the time column (default: detected)"
    )


def read_frame(args: argparse.Namespace, preprocessor_timezone: str | None = None) -> pd.DataFrame:
    if args.data_file is None:
        raise FoxhuntError("pass the bars to use with --parquet-file FILE")
    # validated once, by the run's preprocessor (with the window's row minimum)
    return read_normalized(
        args.data_file,
        timezone=args.timezone or preprocessor_timezone,
        timestamp_column=args.timestamp_column,
    )


def share_options(
    target: argparse.ArgumentParser,
    command: ModuleType,
    groups: Collection[str],
    *,
    skip: Collection[str] = (),
) -> dict[str, object]:
    """Add to ``target`` the flags of ``command``'s argument ``groups`` (by title), the same
    action objects (one definition for both commands), but those whose dest is in ``skip``.
    Returns each added flag's dest and default."""
    scratch = argparse.ArgumentParser(add_help=False).add_subparsers()
    command.register(scratch)
    (source,) = scratch.choices.values()
    added: dict[str, object] = {}
    for group in source._action_groups:
        if group.title not in groups:
            continue
        into = target.add_argument_group(group.title)
        for action in group._group_actions:
            if action.dest not in skip:
                into._add_action(action)
                added[action.dest] = action.default
    return added
