"""`foxhunt predict`: quantile forecasts of the next bars after the latest window of a file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from foxhunt.cli.common import add_data_file_arguments, read_frame
from foxhunt.data.io import read_normalized
from foxhunt.runs import LoadedRun
from foxhunt.serving import load_run
from foxhunt.storage import atomic_write_bytes
from foxhunt.task import bp_per_unit, check_coherent


def register(sub: Any) -> None:
    p = sub.add_parser("predict", help="forecast the next bars after the end of a file")
    p.add_argument(
        "run_dir",
        type=Path,
        help="folder of a trained run, or its int8 or ONNX export (foxhunt export)",
    )
    add_data_file_arguments(p, required=True)
    p.add_argument(
        "--future-file",
        type=Path,
        default=None,
        help="values of the run's --known-columns at the forecast bars (.parquet or .csv: "
        "timestamp[, symbol], the columns; one row per forecast bar); required when it has any",
    )
    p.add_argument("--output", type=Path, default=None, help="also write the table as CSV")
    p.set_defaults(run=run)


def forecast_table(
    loaded: LoadedRun, frame: pd.DataFrame, future: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per symbol and forecast step: quantiles of the log return in basis points."""
    latest = loaded.preprocessor.latest(frame, future)
    with torch.no_grad():
        out = loaded.model(latest.batch)
    quantiles = out.quantiles.numpy() * bp_per_unit(loaded.preprocessor)
    check_coherent(quantiles, "predict")
    rows = []
    for b, symbol in enumerate(latest.symbols):
        for step, when in enumerate(latest.timestamps_for(b)):
            row: dict[str, Any] = {
                "symbol": symbol,
                "last_bar": latest.last_timestamps[b],
                "step": step + 1,
                "timestamp": when,
            }
            for i, q in enumerate(loaded.config.model.quantiles):
                row[f"q{q:g}_bp"] = round(float(quantiles[b, step, i]), 3)
            rows.append(row)
    return pd.DataFrame(rows)


def run(args: argparse.Namespace) -> int:
    loaded = load_run(args.run_dir)  # once: an int8 export builds its model as it loads
    timezone = loaded.preprocessor.timezone
    frame = read_frame(args, timezone)
    future = None
    if args.future_file is not None:
        future = read_normalized(args.future_file, timezone=args.timezone or timezone)
    table = forecast_table(loaded, frame, future)
    print(table.to_string(index=False))
    calendar = loaded.preprocessor.spec.calendar
    when = (
        f"the next bars on calendar {calendar!r}"
        if calendar
        else "times extrapolated from the bar spacing"
    )
    print(f"(log-return quantiles in basis points; {when})")
    if args.output is not None:
        atomic_write_bytes(args.output, table.to_csv(index=False).encode())
    return 0
