"""`foxhunt predict`: quantile forecasts of the next bars after the latest window of a file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxhunt.cli.common import add_data_file_arguments, read_frame

if TYPE_CHECKING:  # the forecast's modules are imported where used: --help needs none
    import pandas as pd

    from foxhunt.runs import LoadedRun


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
    import pandas as pd
    import torch

    from foxhunt.data import latest_windows
    from foxhunt.task import bp_per_unit, check_coherent

    latest = latest_windows(loaded.preprocessor, frame, future)
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
    from foxhunt.data.io import read_normalized
    from foxhunt.data.spacing import check_spacing
    from foxhunt.runs import check_output_file
    from foxhunt.serving import load_run
    from foxhunt.storage import atomic_write_bytes

    if args.output is not None:  # before the work: never a run's own file
        check_output_file(args.output, "--output")
    loaded = load_run(args.run_dir)  # once: an int8 export builds its model as it loads
    timezone = loaded.preprocessor.timezone
    frame = read_frame(args, timezone)
    # 1-minute bars into a 5-minute model once forecast silently at 5-minute steps
    check_spacing(frame, loaded.preprocessor.bar_spacing, str(args.data_file))
    future = None
    if args.future_file is not None:
        future = read_normalized(args.future_file, timezone=args.timezone or timezone)
    table = forecast_table(loaded, frame, future)
    print(table.to_string(index=False))
    calendar = loaded.preprocessor.spec.calendar
    if isinstance(calendar, tuple):  # per symbol; a symbol not listed has none
        when = f"the next bars on each symbol's calendar {dict(calendar)}, others extrapolated"
    elif calendar:
        when = f"the next bars on calendar {calendar!r}"
    else:
        when = "times extrapolated from the bar spacing"
    print(f"(log-return quantiles in basis points; {when})")
    if args.output is not None:
        atomic_write_bytes(args.output, table.to_csv(index=False).encode())
    return 0
