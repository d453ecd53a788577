"""Run a walk-forward backtest: one `train` job per fold, each fold stored once it is done.

    DIR/folds/<k>/run/          the fold's run folder (a `foxhunt train` folder, checkpoints in)
    DIR/folds/<k>/result.json   the fold's scored block of backtest.json: written last, so a
                                fold with it is complete and a resumed backtest skips it
    DIR/backtest.json           config, folds and the summary over all folds

A killed backtest started again with the same DIR continues: complete folds are read back, the
fold in progress resumes from its last checkpoint through the job's `--resume` machinery.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from foxhunt.backtest.config import BacktestConfig
from foxhunt.backtest.folds import (
    Fold,
    cut_folds,
    leaking_targets,
    parse_embargo,
    parse_test_size,
)
from foxhunt.backtest.settings import check_same_backtest
from foxhunt.backtest.summary import fold_block, summarize
from foxhunt.data import prepare_data
from foxhunt.data.pipeline import load_frame
from foxhunt.errors import FoxhuntError
from foxhunt.jobs.train import JobOptions, train
from foxhunt.runs import (
    FORECASTS_FILE,
    RunConfig,
    check_output_file,
    check_output_path,
    holds_run,
)
from foxhunt.runs.files import BACKTEST_CONFIG_FILE, BACKTEST_FILE
from foxhunt.runs.folder import FolderLock
from foxhunt.runs.identity import fingerprint
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
    block["seconds"] = round(time.perf_counter() - started, 1)
    atomic_write_json(done, _json_safe(block))
    m = block["metrics"]
    log.info(
        "fold %d/%d done in %.0fs: TFT QL %.4f (%s), signal net %.0f, Sharpe %.2f",
        k + 1,
        len(folds),
        block["seconds"],
        m.get("mean_quantile_loss", float("nan")),
        ", ".join(
            f"{n} {b.get('mean_quantile_loss', float('nan')):.4f}"
            for n, b in block["baselines"].items()
        ),
        block["signal"]["tft"]["net_pnl"],
        block["signal"]["tft"]["sharpe"],
    )
    return dict(read_json_bounded(done))


def _evaluate_first_model(config: RunConfig, first: Path, run_dir: Path) -> None:
    """--refit none: fold 0's model and scalers forecast this fold's test span."""
    from foxhunt.backtest.frozen import forecast_with_run

    run_dir.mkdir(parents=True, exist_ok=True)
    forecast_with_run(first, config, run_dir / FORECASTS_FILE)


def _parallel_fold(args: tuple[Any, ...]) -> dict[str, Any]:
    threads = args[-1]
    torch.set_num_threads(threads)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(message)s")
    return run_fold(*args[:-1])


def bar_closes(frame: pd.DataFrame) -> pd.Series:
    """Close of each (symbol, timestamp), the entry prices of the signal."""
    index = pd.MultiIndex.from_arrays([frame["symbol"].astype(str), frame["timestamp"]])
    return pd.Series(frame["close"].to_numpy(np.float64), index=index).sort_index()


def run_backtest(
    config: RunConfig,
    output_dir: Path,
    bt: BacktestConfig,
    *,
    callbacks: Callable[[int], tuple[Any, ...]] | None = None,
) -> dict[str, Any]:
    """Cut the folds, run each (skipping complete ones), write and return backtest.json.
    One process writes a backtest folder at a time (a second is refused naming the first)."""
    output_dir = Path(output_dir)
    check_output_path(output_dir)
    check_output_file(output_dir, "--output-dir")  # not RUN/checkpoints, RUN/report
    if output_dir.is_dir() and holds_run(output_dir):
        raise FoxhuntError(
            f"--output-dir {output_dir} holds a trained run (config.json, model.safetensors, "
            "...); a backtest needs a folder of its own"
        )
    with FolderLock(output_dir):
        return _run_backtest(config, output_dir, bt, callbacks)


def _run_backtest(
    config: RunConfig,
    output_dir: Path,
    bt: BacktestConfig,
    callbacks: Callable[[int], tuple[Any, ...]] | None,
) -> dict[str, Any]:
    data_file = fingerprint(config.data.path)  # before reading: what the folds are cut from
    frame = load_frame(config.data)
    times = pd.DatetimeIndex(frame["timestamp"])
    test_size = None if bt.test_size is None else parse_test_size(bt.test_size)
    folds = cut_folds(
        times,
        folds=bt.folds,
        scheme=bt.scheme,
        test_size=test_size,
        embargo=parse_embargo(bt.embargo),
        val_fraction=config.data.val_fraction,
    )
    closes = bar_closes(frame)
    distinct = np.unique(times.as_unit("ns").asi8)
    years = (distinct[-1] - distinct[0]) / (365.25 * 86400e9)
    bars_per_year = len(distinct) / years if years > 0 else 1.0
    settings = _json_safe({**asdict(bt), "run": config.to_dict(), "data_file": data_file})
    check_same_backtest(output_dir, settings)
    (output_dir / "folds").mkdir(parents=True, exist_ok=True)
    atomic_write_json(output_dir / BACKTEST_CONFIG_FILE, settings)
    started = time.perf_counter()
    args = [(config, output_dir, folds, k, bt, closes, bars_per_year) for k in range(bt.folds)]
    if bt.jobs > 1:
        threads = max(1, (os.cpu_count() or 1) // bt.jobs)
        context = get_context("spawn")  # torch and fork do not mix
        try:
            with ProcessPoolExecutor(max_workers=bt.jobs, mp_context=context) as pool:
                blocks = list(pool.map(_parallel_fold, [(*a, (), threads) for a in args]))
        except BrokenProcessPool:  # a worker killed (OOM killer, kill -9): not a bug of ours
            raise FoxhuntError(
                f"a fold's worker process died (killed, or out of memory); complete folds are "
                f"kept in {output_dir / 'folds'}: run the same command again to resume (fewer "
                "--jobs if memory ran out)"
            ) from None
    else:
        blocks = [run_fold(*a, callbacks(a[3]) if callbacks else ()) for a in args]
    frames = [
        pd.read_parquet(fold_dir(output_dir, k) / "run" / FORECASTS_FILE) for k in range(bt.folds)
    ]
    summary = summarize(frames, closes, bt, bars_per_year)
    result = {
        "config": settings,
        "folds": blocks,
        "summary": summary,
        "timing": {"seconds": round(time.perf_counter() - started, 1)},
    }
    result = _json_safe(result)
    atomic_write_json(output_dir / BACKTEST_FILE, result)
    return result


def _json_safe(value: Any) -> Any:
    """NaN and infinities as null (backtest.json is strict JSON); numpy scalars as numbers."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value
