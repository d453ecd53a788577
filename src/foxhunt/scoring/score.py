"""The one scoring path: the model and every baseline on the same windows, the metrics, the
table and the forecasts file. `train` (the test split), `evaluate` (a file) and a frozen
backtest fold (a later test span) all score through `score_windows`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.data import PreparedData, Preprocessor, WindowDataset
from foxhunt.scoring.baselines import RunBaselines
from foxhunt.scoring.windows import forecast_frame, window_targets, write_forecasts
from foxhunt.task import bp_per_unit, forecast_metrics, results_table, score
from foxhunt.task.bootstrap import day_blocks


@dataclass(frozen=True, kw_only=True)
class WindowForecasts:
    """The model's quantile forecasts of every window of `dataset` [W, H, Q] and the realized
    targets [W, H], in the dataset's scaled units (as `predict_windows` returns them)."""

    dataset: WindowDataset
    pred: np.ndarray
    target: np.ndarray


@dataclass(frozen=True, kw_only=True)
class Scored:
    """Metrics (`unit`, `test`, `baselines`), their table, and every forecast behind them in
    basis points: the model's `pred` [W, H, Q], the `target` [W, H] and each baseline's."""

    metrics: dict[str, Any]
    table: str
    dataset: WindowDataset
    quantiles: tuple[float, ...]
    pred: np.ndarray
    target: np.ndarray
    baselines: dict[str, np.ndarray]

    def frame(self) -> pd.DataFrame:
        """One row per window and step (scoring/windows.py's `forecast_frame`)."""
        return forecast_frame(self.dataset, self.pred, self.target, self.quantiles, self.baselines)

    def write_forecasts(self, path: Path) -> None:
        """test_forecasts.parquet, or evaluate's --forecasts file."""
        write_forecasts(path, self.frame())


def score_windows(
    forecasts: WindowForecasts,
    baselines: RunBaselines,
    preprocessor: Preprocessor,
    quantiles: Sequence[float],
) -> Scored:
    """The model's forecasts and every baseline's on the same windows, scored in basis points."""
    scale = bp_per_unit(preprocessor)
    pred, target = forecasts.pred * scale, forecasts.target * scale
    levels = tuple(quantiles)
    everyone = baselines.forecasts(forecasts.dataset, preprocessor, levels)
    # each window's day (its last observed bar): the blocks of the paired bootstrap and the MCS
    dataset = forecasts.dataset
    days = day_blocks(dataset.timestamps[dataset.anchors.numpy()])
    metrics = score(pred, target, levels, baselines=everyone, days=days)
    return Scored(
        metrics=metrics,
        table=results_table(metrics, levels),
        dataset=forecasts.dataset,
        quantiles=levels,
        pred=pred,
        target=target,
        baselines=everyone,
    )


def validation_reference(
    baselines: RunBaselines, data: PreparedData, quantiles: Sequence[float]
) -> dict[str, Any]:
    """The realized-vol baseline's metrics on the validation windows: the score a trained
    model must beat to be kept over the baseline; {} without validation windows. A run on
    another base (`DataConfig.base`) also has that base's Gaussian quantiles, which its
    untrained model forecasts, as `base:<name>`."""
    if not len(data.validation) or baselines.volatility is None:
        return {}
    vol = baselines.volatility_forecasts(data.validation, data.preprocessor, quantiles)
    unit = bp_per_unit(data.preprocessor)
    observed = window_targets(data.validation) * unit
    out = {"realized_vol": forecast_metrics(vol["realized_vol"], observed, quantiles)}
    if data.preprocessor.base != "realized_vol":
        base = base_forecast(data.validation, quantiles) * unit
        out[f"base:{data.preprocessor.base}"] = forecast_metrics(base, observed, quantiles)
    return out


def base_forecast(dataset: WindowDataset, quantiles: Sequence[float]) -> np.ndarray:
    """[W, H, Q] the Gaussian quantiles of the windows' own scale (scaled units): the
    forecast of an untrained "baseline" output."""
    from scipy.stats import norm

    if dataset.base_volatility is None or dataset.profile is None:
        raise ValueError("the windows carry no baseline scale")
    anchors = dataset.anchors.numpy()
    steps = anchors[:, None] + np.arange(1, dataset.horizon + 1)  # [W, H] target rows
    scale = dataset.base_volatility.numpy()[anchors][:, None] * dataset.profile.numpy()[steps]
    z = norm.ppf(np.asarray(quantiles, dtype=np.float64))
    return scale.astype(np.float64)[..., None] * z  # float32 products, as the batches hold
