"""`foxhunt predict`: quantile forecasts of the next bars after the latest window of a file."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxhunt.cli.common import READ_FIELDS, data_section, read_frame, run_store_data
from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, generated_command, resolve
from foxhunt.config_fields import setting

if TYPE_CHECKING:  # the forecast's modules are imported where used: --help needs none
    import pandas as pd

    from foxhunt.data.latest import LatestWindows
    from foxhunt.runs import LoadedRun


@dataclass(frozen=True, kw_only=True)
class PredictOptions:
    """What to forecast from and where the table goes.

    Attributes:
        run_dir: folder of a trained run, or its int8 or ONNX export (foxhunt export).
        future_file: values of the run's known_columns at the forecast bars (.parquet or
            .csv: timestamp[, symbol], the columns; one row per forecast bar); required when
            it has any.
        output: also write the table as CSV.
    """

    run_dir: Path | None = setting(None, positional=True)
    future_file: Path | None = None
    output: Path | None = None


def command() -> Command:
    sections = (data_section(*READ_FIELDS), Section("", PredictOptions))
    return generated_command(
        "foxhunt predict",
        "Forecast the next bars after the latest window of a file.",
        sections,
        required=("run_dir", "data.path"),
    )


def register(sub: Any) -> None:
    add_command(sub, "predict", "forecast the next bars after the end of a file", run)


def forecast_table(loaded: LoadedRun, latest: LatestWindows) -> pd.DataFrame:
    """One row per symbol and forecast step: quantiles of the log return in basis points."""
    import pandas as pd
    import torch

    from foxhunt.task import bp_per_unit, check_coherent

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


def run(line: argparse.Namespace) -> int:
    args = resolve(command(), line.argv)[1]
    # imported once the line is parsed: --help needs none of them
    from foxhunt.data import latest_windows
    from foxhunt.data.io import read_normalized
    from foxhunt.data.spacing import check_spacing
    from foxhunt.data.stored_windows import stored_latest
    from foxhunt.runs import check_output_file
    from foxhunt.serving import load_run
    from foxhunt.storage import atomic_write_bytes

    if args.output is not None:  # before the work: never a run's own file
        check_output_file(args.output, "--output")
    loaded = load_run(args.run_dir)  # once: an int8 export builds its model as it loads
    timezone = loaded.preprocessor.timezone
    future = None
    if args.future_file is not None:
        future = read_normalized(args.future_file, timezone=args.data.timezone or timezone)
    # the run's feature store entry of these bars, if it has one (data/stored_windows.py)
    stored = run_store_data(loaded.config.data, args.data)
    latest = None if stored is None else stored_latest(stored, loaded.preprocessor, future)
    if latest is None:  # encoded in memory
        frame = read_frame(args.data, timezone)
        # 1-minute bars into a 5-minute model once forecast silently at 5-minute steps
        check_spacing(frame, loaded.preprocessor.bar_spacing, str(args.data.path))
        latest = latest_windows(loaded.preprocessor, frame, future)
    table = forecast_table(loaded, latest)
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
