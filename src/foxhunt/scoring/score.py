"""The one scoring path: the model and every baseline on the same windows, the metrics, the
table and the forecasts file. `train` (the test split), `evaluate` (a file) and a frozen
backtest fold (a later test span) all score through `score_windows`."""

from __future__ import annotations

import logging
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

log = logging.getLogger("foxhunt.scoring")

#: a baseline forecasting a quantile beyond this many times the largest unconditional quantile
#: of the training targets is unavailable: a legitimate volatility forecast in a regime 20
#: times as volatile as the training span's reaches some 30 times it
ABSURD_FACTOR = 100.0


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
    absurd = absurd_baselines(everyone, baselines.historical)
    everyone = {k: np.full(v.shape, np.nan) if k in absurd else v for k, v in everyone.items()}
    # each window's day (its last observed bar): the blocks of the paired bootstrap and the MCS
    dataset = forecasts.dataset
    days = day_blocks(dataset.timestamps[dataset.anchors.numpy()])
    metrics = score(pred, target, levels, baselines=everyone, days=days, unavailable=absurd)
    return Scored(
        metrics=metrics,
        table=results_table(metrics, levels),
        dataset=forecasts.dataset,
        quantiles=levels,
        pred=pred,
        target=target,
        baselines=everyone,
    )


def absurd_baselines(forecasts: dict[str, np.ndarray], historical: np.ndarray) -> dict[str, str]:
    """{name: why} the baselines whose forecasts are absurd (docs/forecasting.md): a quantile
    beyond ABSURD_FACTOR times the largest training quantile (`historical`, the train
    targets' unconditional quantiles, bp). A baseline fitted on too little data (a HAR on a
    few hundred rows after its week of warm-up) forecast 1e10 to 1e28 bp where returns are a
    few bp, and its loss was printed as a number (issue 42). Each is logged once."""
    reach = float(np.max(np.abs(historical), initial=0.0))
    if not np.isfinite(reach) or reach <= 0:  # constant training targets: no scale to judge by
        return {}
    bound = ABSURD_FACTOR * reach
    out = {}
    for name, forecast in forecasts.items():
        finite = forecast[np.isfinite(forecast)]
        largest = float(np.max(np.abs(finite), initial=0.0))
        if largest > bound:
            out[name] = (
                f"absurd forecasts: a quantile of {largest:.3g} bp, over {ABSURD_FACTOR:g} x the "
                f"largest training quantile ({reach:.3g} bp); fitted on too little data?"
            )
            log.warning("baseline %s unavailable: %s", name, out[name])
    return out


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
