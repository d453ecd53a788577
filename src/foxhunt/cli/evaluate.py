"""`foxhunt evaluate`: metrics of a trained run on every window of a file, with baselines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from foxhunt.cli.common import add_data_file_arguments, read_frame
from foxhunt.run import BASELINE_FILE, load_run, read_json
from foxhunt.storage import atomic_write_json
from foxhunt.training.inference import predict_windows
from foxhunt.training.job import BASIS_POINTS, results_table, scale_baseline_metrics, score


def register(sub: Any) -> None:
    p = sub.add_parser("evaluate", help="metrics of a trained run on a file")
    p.add_argument(
        "run_dir", type=Path, help="folder of a trained run, or its int8 export (foxhunt export)"
    )
    add_data_file_arguments(p, required=True)
    p.add_argument("--json", type=Path, default=None, help="also write the metrics as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    loaded = load_run(args.run_dir)
    frame = read_frame(args, loaded.preprocessor.timezone)
    dataset = loaded.preprocessor.dataset(frame)
    pred, target, _ = predict_windows(loaded.model, dataset)
    assert target is not None
    scale = loaded.preprocessor.target_scale * BASIS_POINTS
    historical = np.asarray(read_json(args.run_dir / BASELINE_FILE)["historical_quantiles"])
    quantiles = loaded.config.model.quantiles
    metrics = score(pred * scale, target * scale, historical, quantiles)
    rolling = scale_baseline_metrics(dataset, quantiles, scale)
    if rolling is not None:
        metrics["baselines"]["rolling_vol_gaussian"] = rolling
    metrics["source"] = str(args.data_file)
    print(results_table(metrics, quantiles))
    if args.json is not None:
        atomic_write_json(args.json, metrics)
    else:
        print(json.dumps({"test.mean_quantile_loss": metrics["test"]["mean_quantile_loss"]}))
    return 0
