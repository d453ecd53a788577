"""One fold of a walk-forward backtest: its windows checked against the purge, its model
trained (resumed from its last checkpoint, warm-started from the previous fold's, or fold 0's
reused with --refit none), its test forecasts scored and stored.

    DIR/folds/<k>/run/          the fold's run folder (a `foxhunt train` folder, checkpoints in)
    DIR/folds/<k>/result.json   the fold's scored block of backtest.json: written last, so a
                                fold with it is complete and a resumed backtest skips it
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from foxhunt.backtest.config import BacktestConfig
from foxhunt.backtest.folds import Fold, leaking_targets
from foxhunt.backtest.strict_json import json_safe
from foxhunt.backtest.summary import fold_block
from foxhunt.data import prepare_data
from foxhunt.errors import FoxhuntError
from foxhunt.jobs.train import JobOptions, train
from foxhunt.runs import FORECASTS_FILE, RunConfig
from foxhunt.serving import load_run
from foxhunt.storage import atomic_write_json
from foxhunt.storage.base import CheckpointError
from foxhunt.storage.bounded import UnsafeFileError, read_json_bounded

log = logging.getLogger("foxhunt.backtest")

RESULT_FILE = "result.json"


def fold_dir(output_dir: Path, k: int) -> Path:
    return output_dir / "folds" / str(k)


def fold_config(config: RunConfig, fold: Fold) -> RunConfig:
    return replace(config, data=replace(config.data, split=fold.split()))


def check_fold_data(config: RunConfig, folds: list[Fold], k: int) -> dict[str, int]:
    """Window counts of fold k, and the purge checked on the windows the job will train on."""
    data = prepare_data(config.data)
    horizon = config.data.horizon
    leaks = 0
    for dataset in (data.train, data.validation):
        anchors = dataset.anchors.numpy()
        rows = anchors[:, None] + np.arange(1, horizon + 1)
        leaks += leaking_targets(dataset.timestamps.as_unit("ns").asi8[rows], folds, k)
    if leaks:  # a bug, not bad input: the data layer's purge failed
        raise AssertionError(f"fold {k}: {leaks} training targets fall in a test span or embargo")
    return {
        "train": len(data.train),
        "validation": len(data.validation),
        "test": len(data.test),
        "purged": data.summary.purged,
    }


def _has_checkpoint(run_dir: Path) -> bool:
    folder = run_dir / "checkpoints"
    return folder.is_dir() and any(folder.iterdir())


def _warm_start(previous: Path) -> Callable[[torch.nn.Module], None]:
    state = load_run(previous).model.state_dict()

    def transform(model: torch.nn.Module) -> None:
        model.load_state_dict(state)

    return transform


def train_fold(
    config: RunConfig,
    run_dir: Path,
    *,
    bt: BacktestConfig,
    warm_from: Path | None,
    callbacks: tuple[Any, ...] = (),
) -> None:
    """The fold's train job: resumed when a checkpoint of it exists, else from the start."""
    transforms = (_warm_start(warm_from),) if warm_from is not None else ()
    options = JobOptions(checkpoint_every=bt.checkpoint_every, callbacks=callbacks)
    if _has_checkpoint(run_dir):
        log.info("resuming the fold's training from its last checkpoint in %s", run_dir)
        try:
            train(config, run_dir, options=replace(options, resume=True), model_transforms=())
            return
        except CheckpointError as exc:
            log.warning("cannot resume (%s); training the fold again", exc)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    train(config, run_dir, options=options, model_transforms=transforms)


def run_fold(
    config: RunConfig,
    output_dir: Path,
    folds: list[Fold],
    k: int,
    bt: BacktestConfig,
    closes: pd.Series,
    bars_per_year: float,
    callbacks: tuple[Any, ...] = (),
) -> dict[str, Any]:
    """Train (or resume) and score fold k; its block is stored in folds/<k>/result.json."""
    where = fold_dir(output_dir, k)
    done = where / RESULT_FILE
    if done.is_file():
        log.info("fold %d/%d: complete, read back from %s", k + 1, len(folds), done)
        try:
            return dict(read_json_bounded(done))
        except (UnsafeFileError, TypeError, ValueError) as exc:  # said only "damaged"
            raise FoxhuntError(
                f"{exc}; remove the folder {where} to run fold {k + 1} again"
            ) from None
    fold = folds[k]
    log.info(
        "fold %d/%d: train %s .. %s, test %s .. %s (embargo %s)",
        k + 1,
        len(folds),
        fold.train_start,
        fold.embargo_start,
        fold.test_start,
        fold.test_end or "end",
        fold.embargo,
    )
    started = time.perf_counter()
    cfg = fold_config(config, fold)
    windows = check_fold_data(cfg, folds, k)
    run_dir = where / "run"
    if bt.refit == "none" and k > 0:
        _evaluate_first_model(cfg, fold_dir(output_dir, 0) / "run", run_dir)
    else:
        warm = fold_dir(output_dir, k - 1) / "run" if bt.refit == "warm" and k > 0 else None
        train_fold(cfg, run_dir, bt=bt, warm_from=warm, callbacks=callbacks)
    frame = pd.read_parquet(run_dir / FORECASTS_FILE)
    block = fold_block(fold, windows, frame, closes, bt.costs, bars_per_year)
    trained = fold_dir(output_dir, 0) / "run" if bt.refit == "none" else run_dir
    block["weights"] = weights_of(trained)
    block["seconds"] = round(time.perf_counter() - started, 1)
    atomic_write_json(done, json_safe(block))
    _log_done(k, len(folds), block)
    return dict(read_json_bounded(done))


def _log_done(k: int, folds: int, block: dict[str, Any]) -> None:
    """One line: the fold's time, whose weights, its TFT against each baseline, its signal."""
    m = block["metrics"]
    log.info(
        "fold %d/%d done in %.0fs: TFT QL %.4f (%s weights), %s, signal net %.0f, Sharpe %.2f",
        k + 1,
        folds,
        block["seconds"],
        m.get("mean_quantile_loss", float("nan")),
        block["weights"] or "unknown",
        ", ".join(
            f"{n} {b.get('mean_quantile_loss', float('nan')):.4f}"
            for n, b in block["baselines"].items()
        ),
        block["signal"]["tft"]["net_pnl"],
        block["signal"]["tft"]["sharpe"],
    )


def weights_of(run_dir: Path) -> str | None:
    """Whose weights forecast from a run folder: "trained", "initial" when the gate kept the
    calibrated head (metrics.json's training.kept_initial), or "head:NAME" when base NAME's
    head was served instead (training.served_head, jobs/fallback.py); None if it does not
    say."""
    try:
        training = dict(read_json_bounded(run_dir / "metrics.json")).get("training")
    except (OSError, UnsafeFileError, TypeError, ValueError):
        return None
    if not isinstance(training, dict) or "kept_initial" not in training:
        return None
    served = training.get("served_head")
    if isinstance(served, str):
        return f"head:{served}"
    return "initial" if training["kept_initial"] else "trained"


def _evaluate_first_model(config: RunConfig, first: Path, run_dir: Path) -> None:
    """--refit none: fold 0's model and scalers forecast this fold's test span."""
    from foxhunt.backtest.frozen import forecast_with_run

    run_dir.mkdir(parents=True, exist_ok=True)
    forecast_with_run(first, config, run_dir / FORECASTS_FILE)
