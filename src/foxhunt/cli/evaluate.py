"""`foxhunt evaluate`: metrics of a trained run on every window of a file, with baselines."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from foxhunt.cli.common import add_data_file_arguments, read_frame
from foxhunt.errors import ConfigError

log = logging.getLogger("foxhunt.evaluate")


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
    import numpy as np

    from foxhunt.baselines import FittedBaselines
    from foxhunt.data.spacing import check_spacing
    from foxhunt.runs import BASELINE_FILE, RunFileError, check_output_file, read_baseline_state
    from foxhunt.serving import load_run
    from foxhunt.storage import atomic_write_json
    from foxhunt.task import all_baselines, bp_per_unit, results_table, score
    from foxhunt.training.comparison import (
        bar_returns,
        forecast_frame,
        vol_baselines,
        write_forecasts,
    )
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
    scale = bp_per_unit(loaded.preprocessor)
    pred, target = pred * scale, target * scale
    quantiles = loaded.config.model.quantiles
    saved = read_baseline_state(
        args.run_dir / BASELINE_FILE,
        horizon=loaded.config.model.inputs.horizon,
        quantiles=len(quantiles),
    )
    historical = np.asarray(saved["historical_quantiles"])
    vol = None
    if "volatility" in saved:  # fitted on the run's train span; filtered over this file
        bars = bar_returns(dataset, loaded.preprocessor, train_end=None)
        try:  # the saved state's shapes and types only show when it is used: name the file
            fitted = FittedBaselines.from_state_dict(saved["volatility"])
            vol = vol_baselines(fitted, bars, dataset, quantiles)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            where = args.run_dir / BASELINE_FILE
            raise RunFileError(f"{where}: volatility is damaged ({exc!r})") from None
    else:
        log.warning(
            "%s predates the volatility baselines; retrain to compare with them", BASELINE_FILE
        )
    metrics = score(pred, target, historical, quantiles, vol=vol)
    metrics["source"] = str(args.data_file)
    print(results_table(metrics, quantiles))
    if args.forecasts is not None:
        everyone = all_baselines(historical, pred.shape, vol)
        write_forecasts(args.forecasts, forecast_frame(dataset, pred, target, quantiles, everyone))
    if args.json is not None:
        atomic_write_json(args.json, metrics)
    else:
        print(json.dumps({"test.mean_quantile_loss": metrics["test"]["mean_quantile_loss"]}))
    return 0
