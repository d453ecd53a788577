"""Run a walk-forward backtest: the folds cut, one `train` job per fold (``fold_job.py``),
each fold stored once it is done, and the summary over all folds.

    DIR/folds/<k>/              each fold's run folder and result.json (``fold_job.py``)
    DIR/backtest.json           config, folds and the summary over all folds

A killed backtest started again with the same DIR continues: complete folds are read back, the
fold in progress resumes from its last checkpoint through the job's `--resume` machinery.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from foxhunt.backtest.config import BacktestConfig
from foxhunt.backtest.fold_job import fold_dir, run_fold
from foxhunt.backtest.folds import (
    check_every_symbol_trains,
    cut_folds,
    parse_embargo,
    parse_test_size,
)
from foxhunt.backtest.settings import check_same_backtest
from foxhunt.backtest.strict_json import json_safe
from foxhunt.backtest.summary import summarize
from foxhunt.data.contracts import find_contract_column
from foxhunt.data.pipeline import load_frame
from foxhunt.data.validate import validate_bars
from foxhunt.errors import FoxhuntError
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
from foxhunt.storage import atomic_write_json

#: BACKTEST_FILE is imported from here by foxhunt.backtest (lazily)
__all__ = ["BACKTEST_FILE", "bar_closes", "run_backtest"]


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
    raw = load_frame(config.data)
    source = str(raw.attrs.get("source", config.data.path))
    column = find_contract_column(raw, config.data.contract_column, source)
    # checked before a file is written: bad bars were refused by fold 0, after backtest_config
    frame = validate_bars(raw, source=source, min_rows=1, contract_column=column)
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
    check_every_symbol_trains(frame, folds, source)  # before the folder is written
    closes = bar_closes(frame)
    distinct = np.unique(times.as_unit("ns").asi8)
    years = (distinct[-1] - distinct[0]) / (365.25 * 86400e9)
    bars_per_year = len(distinct) / years if years > 0 else 1.0
    settings = json_safe({**asdict(bt), "run": config.to_dict(), "data_file": data_file})
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
    result = json_safe(result)
    atomic_write_json(output_dir / BACKTEST_FILE, result)
    return result
