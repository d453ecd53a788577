"""The model's forecasts scored next to the baselines' on the same windows, and the table
(plain arrays; foxhunt.scoring hands them the windows of a run)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from foxhunt.task.metrics import (
    forecast_metrics,
    format_table,
    unavailable_metrics,
)
from foxhunt.task.units import UNIT

log = logging.getLogger("foxhunt.task")


def score(
    pred: np.ndarray,
    target: np.ndarray,
    quantiles: tuple[float, ...],
    *,
    baselines: dict[str, np.ndarray],
) -> dict[str, Any]:
    """The model's metrics and each baseline's on the same windows (`baselines`: {name:
    [N, H, Q]}, foxhunt.scoring's `RunBaselines.forecasts`); everything in basis points. A
    baseline with NaN (not fitted) is reported unavailable."""
    scored = {}
    for name, forecast in baselines.items():
        if np.isfinite(forecast).all():
            scored[name] = forecast_metrics(forecast, target, quantiles)
        else:
            log.warning("baseline %s has no forecast for some windows; reported as NaN", name)
            reason = "no forecast for some windows (see the log)"
            scored[name] = unavailable_metrics(quantiles, len(target), reason)
    return {"unit": UNIT, "test": forecast_metrics(pred, target, quantiles), "baselines": scored}


def results_table(metrics: dict[str, Any], quantiles: tuple[float, ...]) -> str:
    rows = {"tft": metrics["test"], **metrics["baselines"]}
    return format_table(rows, quantiles, metrics["unit"])
