"""`foxhunt evaluate`: metrics of a trained run on every window of a file, with baselines."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foxhunt.cli.common import READ_FIELDS, data_section, read_frame, run_store_data
from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, generated_command, resolve
from foxhunt.config_fields import setting
from foxhunt.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class EvaluateOptions:
    """Which run to score and where its metrics go.

    Attributes:
        run_dir: folder of a trained run, or its int8 or ONNX export (foxhunt export).
        json: also write the metrics as JSON.
        forecasts: also write every window's forecasts and the baselines' to this .parquet
            file (as test_forecasts.parquet).
    """

    run_dir: Path | None = setting(None, positional=True)
    json: Path | None = None
    forecasts: Path | None = None


def command() -> Command:
    sections = (data_section(*READ_FIELDS), Section("", EvaluateOptions))
    return generated_command(
        "foxhunt evaluate",
        "Metrics of a trained run on every window of a file, with baselines.",
        sections,
        required=("run_dir", "data.path"),
    )


def register(sub: Any) -> None:
    add_command(sub, "evaluate", "metrics of a trained run on a file", run)


def run(line: argparse.Namespace) -> int:
    args = resolve(command(), line.argv)[1]
    # imported once the line is parsed: --help needs none of them
    from foxhunt.data.spacing import check_spacing
    from foxhunt.data.stored_windows import stored_windows
    from foxhunt.runs import check_output_file
    from foxhunt.scoring import WindowForecasts, read_run_baselines, score_windows
    from foxhunt.serving import load_run
    from foxhunt.storage import atomic_write_json
    from foxhunt.training.inference import predict_windows

    if args.json is not None:
        check_output_file(args.json, "--json")
    if args.forecasts is not None:
        check_output_file(args.forecasts, "--forecasts")
        if args.forecasts.suffix.lower() != ".parquet":  # x.csv held Parquet bytes, exit 0
            raise ConfigError(f"--forecasts {args.forecasts}: name a .parquet file (Parquet)")
    loaded = load_run(args.run_dir)
    # the run's feature store entry of these bars, if it has one (data/stored_windows.py)
    stored = run_store_data(loaded.config.data, args.data)
    dataset = None if stored is None else stored_windows(stored, loaded.preprocessor)
    if dataset is None:  # encoded in memory
        frame = read_frame(args.data, loaded.preprocessor.timezone)
        check_spacing(frame, loaded.preprocessor.bar_spacing, str(args.data.path))
        dataset = loaded.preprocessor.dataset(frame)
    pred, target, _ = predict_windows(loaded.model, dataset)
    assert target is not None
    quantiles = loaded.config.model.quantiles
    # fitted on the run's train span; filtered over this file without refitting
    baselines = read_run_baselines(
        args.run_dir, horizon=loaded.config.model.inputs.horizon, quantiles=len(quantiles)
    )
    forecasts = WindowForecasts(dataset=dataset, pred=pred, target=target)
    scored = score_windows(forecasts, baselines, loaded.preprocessor, quantiles)
    metrics = {**scored.metrics, "source": str(args.data.path)}
    print(scored.table)
    if args.forecasts is not None:
        scored.write_forecasts(args.forecasts)
    if args.json is not None:
        atomic_write_json(args.json, metrics)
    else:
        print(json.dumps({"test.mean_quantile_loss": metrics["test"]["mean_quantile_loss"]}))
    return 0
