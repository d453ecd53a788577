"""The TFT's forecasts scored next to the baselines' on the same windows, and the table."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from foxhunt.task.difference import compare_forecasters, coverage_tests
from foxhunt.task.metrics import (
    forecast_metrics,
    format_table,
    unavailable_metrics,
    window_losses,
    zero_forecast,
)
from foxhunt.task.units import UNIT

log = logging.getLogger("foxhunt.task")


def all_baselines(
    historical: np.ndarray, shape: tuple[int, int, int], vol: dict[str, np.ndarray] | None
) -> dict[str, np.ndarray]:
    """{name: [W, H, Q]}: historical quantiles [H, Q] broadcast, zero, then the vol baselines."""
    return {
        "historical_quantiles": np.broadcast_to(historical, shape),
        "zero": zero_forecast(*shape),
        **(vol or {}),
    }


def score(
    pred: np.ndarray,
    target: np.ndarray,
    historical: np.ndarray,
    quantiles: tuple[float, ...],
    *,
    vol: dict[str, np.ndarray] | None = None,
    days: np.ndarray | None = None,
) -> dict[str, Any]:
    """TFT metrics and the baselines on the same windows; everything in basis points. `vol`:
    volatility baselines [N, H, Q] (training/comparison.py); one with NaN (not fitted) is
    unavailable. "differences" holds the tests of difference (task/difference.py) on the
    per-window losses: DM of the TFT against each, the MCS over all; `days` [N] labels each
    window's day for the paired day-block bootstrap and the MCS's block length.
    "coverage_tests": Kupiec and Christoffersen per forecaster and quantile level."""
    baselines = {}
    losses = {"tft": window_losses(pred, target, quantiles)}
    coverage = {"tft": coverage_tests(pred, target, quantiles)}
    for name, forecast in all_baselines(historical, pred.shape, vol).items():
        if np.isfinite(forecast).all():
            baselines[name] = forecast_metrics(forecast, target, quantiles)
            losses[name] = window_losses(forecast, target, quantiles)
            coverage[name] = coverage_tests(forecast, target, quantiles)
        else:
            log.warning("baseline %s has no forecast for some windows; reported as NaN", name)
            reason = "no forecast for some windows (see the log)"
            baselines[name] = unavailable_metrics(quantiles, len(target), reason)
            losses[name] = np.full(len(target), np.nan)
    return {
        "unit": UNIT,
        "test": forecast_metrics(pred, target, quantiles),
        "baselines": baselines,
        "differences": compare_forecasters(
            losses, reference="tft", horizon=pred.shape[1], days=days
        ),
        "coverage_tests": coverage,  # per forecaster with a forecast, per quantile level
    }


def results_table(metrics: dict[str, Any], quantiles: tuple[float, ...]) -> str:
    rows = {"tft": metrics["test"], **metrics["baselines"]}
    return format_table(rows, quantiles, metrics["unit"], metrics.get("differences"))
