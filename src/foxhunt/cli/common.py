"""Arguments and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from foxhunt.data.io import read_normalized
from foxhunt.errors import FoxhuntError


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
