"""Everything a report shows, computed from the run folder and its test split."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from foxhunt.data import FeatureSchema, PreparedData, WindowDataset, prepare_data
from foxhunt.errors import DataError, FoxhuntError
from foxhunt.input_path import check_readable_file
from foxhunt.model.config import TFTConfig
from foxhunt.runs import HISTORY_FILE, METRICS_FILE, read_history_lines, read_metrics
from foxhunt.runs.identity import fingerprint, read_identity
from foxhunt.scoring.importance import input_groups
from foxhunt.serving import load_run
from foxhunt.task import bp_per_unit, calibration
from foxhunt.training.inference import selection_weight_sums, sequential_batches


@dataclass(frozen=True)
class ReportData:
    """Arrays behind the figures. Forecasts and targets are in basis points of log return."""

    run_dir: Path
    epochs: list[dict[str, Any]]  # history.jsonl epoch records
    memory: list[dict[str, Any]]  # history.jsonl memory events
    metrics: dict[str, Any]  # metrics.json
    schema: FeatureSchema
    quantiles: tuple[float, ...]
    forecasts: np.ndarray  # [N, H, Q] test split
    targets: np.ndarray  # [N, H]
    anchor_times: pd.DatetimeIndex  # [N] time of each window's last observed bar
    static_importance: np.ndarray  # [S + C] mean selection weight per static variable
    past_importance: np.ndarray  # [P] mean over windows and lookback steps
    future_importance: np.ndarray  # [F] mean over windows and horizon steps
    attention: np.ndarray  # [H, L + H] mean attention of each horizon step over positions
    lookback: int
    groups: dict[str, str]  # input name -> its feature group (scoring/importance.py)

    @property
    def calibration(self) -> np.ndarray:
        """Observed share of targets at or below each quantile forecast: [Q]."""
        return calibration(self.forecasts, self.targets)


def read_history(run_dir: Path) -> list[dict[str, Any]]:
    return read_history_lines(run_dir / HISTORY_FILE)  # bounded; a damaged line is named


@torch.no_grad()
def interpret(model: torch.nn.Module, dataset: WindowDataset, scale: float) -> dict[str, Any]:
    """Forecasts, selection weights and attention over every window of `dataset`."""
    model.eval()
    device = next(model.parameters()).device  # a job's model may still be on its GPU
    sums: dict[str, Any] = {}
    forecasts, targets, anchors = [], [], []
    count = 0
    for batch in sequential_batches(dataset, 512):
        out = model(batch.to(device), return_attention=True)
        forecasts.append(out.quantiles.float().cpu().numpy() * scale)
        assert batch.target is not None and batch.anchor is not None
        targets.append(batch.target.numpy() * scale)
        anchors.append(batch.anchor.numpy())
        parts = {  # the same reduction as metrics.json's importance
            **selection_weight_sums(out),
            "attention": out.attention.double().sum(0).cpu().numpy(),
        }
        for key, value in parts.items():
            sums[key] = sums.get(key, 0) + value
        count += batch.batch_size
    return {
        "forecasts": np.concatenate(forecasts).astype(np.float64),
        "targets": np.concatenate(targets).astype(np.float64),
        "anchors": np.concatenate(anchors),
        **{key: value / count for key, value in sums.items()},
    }


def collect(run_dir: Path, data_file: Path | None = None) -> ReportData:
    """Load the run, rebuild its test split with the run's own preprocessing, interpret it."""
    loaded = load_run(run_dir)
    data_config = loaded.config.data
    if data_file is not None:  # given: say what it is (a folder, a FIFO) if not bars
        check_readable_file(data_file)
        data_config = replace(data_config, path=data_file)
    if data_config.path is not None and not Path(data_config.path).is_file():
        raise FoxhuntError(
            f"{data_config.path} (the run's data) is gone; pass the bars with --parquet-file"
        )
    _check_run_data(run_dir, data_config.path)
    data = prepare_data(data_config, preprocessor=loaded.preprocessor)
    return collect_from(run_dir, loaded.model, data, loaded.config.model)


def _check_run_data(run_dir: Path, path: Path | None) -> None:
    """The report rebuilds the run's test split: from other bars (the file changed at its
    path, or another --parquet-file) its figures and metrics would describe those, exit 0."""
    identity = read_identity(run_dir)
    if identity is None or (identity["data"].get("synthetic") and path is None):
        return  # a run from before identities: nothing to compare with
    if fingerprint(path) != identity["data"]:
        where = path if path is not None else "the built-in synthetic bars"
        raise DataError(
            f"{where} is not the data run {run_dir} was trained on (size or content "
            "differs); pass the run's bars with --parquet-file"
        )


def collect_from(
    run_dir: Path, model: torch.nn.Module, data: PreparedData, config: TFTConfig
) -> ReportData:
    """The report of a model and prepared data already in memory: `foxhunt train` hands on
    what its job trained and read, so the bars are read and the weights loaded only once."""
    found = interpret(model, data.test, bp_per_unit(data.preprocessor))
    history = read_history(run_dir)
    return ReportData(
        run_dir=run_dir,
        epochs=[h for h in history if h.get("event") == "epoch"],
        memory=[h for h in history if str(h.get("event", "")).startswith("memory")],
        metrics=read_metrics(run_dir / METRICS_FILE, config.quantiles)
        if (run_dir / METRICS_FILE).exists()
        else {},
        schema=data.schema,
        quantiles=config.quantiles,
        forecasts=found["forecasts"],
        targets=found["targets"],
        anchor_times=pd.DatetimeIndex(data.test.timestamps[found["anchors"]]),
        static_importance=found["static"],
        past_importance=found["past"],
        future_importance=found["future"],
        attention=found["attention"],
        lookback=config.inputs.lookback,
        groups=input_groups(data.preprocessor),
    )
