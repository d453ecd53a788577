"""`foxhunt evaluate`: metrics of a trained run on every window of a file, with baselines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from foxhunt.cli.common import add_data_file_arguments, read_frame
from foxhunt.errors import ConfigError


def register(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="metrics of a trained run on a file")
    p.add_argument(
        "run_dir",
        type=Path,
        help="folder of a trained run, or its int8 or ONNX export (foxhunt export)",
    )
    add_data_file_arguments(p, required=True)
    p.add_argument("--json", type=Path, default=None, help="also write the metrics as JSON")
    p.add_argument(
        "--forecasts",
        type=Path,
        default=None,
        metavar="FILE.parquet",
        help="also write every window's forecasts and the baselines' (as test_forecasts.parquet)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # imported here: registering the flags (--help) needs none of them, nor torch
    from foxhunt.data.spacing import check_spacing
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
    frame = read_frame(args, loaded.preprocessor.timezone)
    check_spacing(frame, loaded.preprocessor.bar_spacing, str(args.data_file))
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
    metrics = {**scored.metrics, "source": str(args.data_file)}
    print(scored.table)
    if args.forecasts is not None:
        scored.write_forecasts(args.forecasts)
    if args.json is not None:
        atomic_write_json(args.json, metrics)
    else:
        print(json.dumps({"test.mean_quantile_loss": metrics["test"]["mean_quantile_loss"]}))
    return 0
