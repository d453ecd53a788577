"""Arguments and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from foxhunt.errors import ConfigError, FoxhuntError

if TYPE_CHECKING:  # the readers are imported where used: registering the flags needs none
    import pandas as pd


def csv_tuple(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def add_data_file_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    group = parser.add_argument_group("data file")
    group.add_argument(
        "--parquet-file",
        "--csv-file",
        "--data-file",
        dest="data_file",
        type=Path,
        required=required,
        help="OHLCV bars (.parquet or .csv): timestamp, open, high, low, close, volume[, symbol]"
        "[, contract]; or a folder or quoted glob of Parquet files read as one (docs/data.md)",
    )
    group.add_argument(
        "--timezone", default=None, help="timezone of naive timestamps (e.g. America/New_York)"
    )
    group.add_argument(
        "--timestamp-column", default=None, help="name of the time column (default: detected)"
    )
    group.add_argument(
        "--start",
        default=None,
        help="first bar time kept (inclusive; naive = --timezone, default America/New_York)",
    )
    group.add_argument("--end", default=None, help="first bar time dropped (exclusive)")
    group.add_argument(
        "--symbols", type=csv_tuple, default=(), help="keep only these symbols (comma-separated)"
    )


def read_frame(args: argparse.Namespace, preprocessor_timezone: str | None = None) -> pd.DataFrame:
    if args.data_file is None:
        raise FoxhuntError("pass the bars to use with --parquet-file FILE")
    from foxhunt.data.sources import read_source, row_filter

    timezone = args.timezone or preprocessor_timezone
    try:
        bounds = row_filter(args.start, args.end, args.symbols, timezone)
    except ConfigError as exc:  # name the flag, not the config field
        raise ConfigError(str(exc).replace("DataConfig.", "--")) from None
    # validated once, by the run's preprocessor (with the window's row minimum)
    return read_source(
        args.data_file, timezone=timezone, timestamp_column=args.timestamp_column, bounds=bounds
    )
