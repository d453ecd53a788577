"""The forecasting task: its loss, its units and its scoring, in one place.

A layer of its own between the data and baselines below and memory, quantization and training
above: it may import the leaves, ``model``, ``data`` and ``baselines``, nothing higher. The
pinball formula is the model's (``foxhunt.model.loss.pinball``); everything here calls it.
"""

from foxhunt.task.coherence import CrossingQuantilesWarning, check_coherent, crossed_forecasts
from foxhunt.task.difference import compare_forecasters, coverage_tests, diebold_mariano
from foxhunt.task.loss import Autocast, BatchLoss, batch_loss, loss_of, loss_scale
from foxhunt.task.metrics import (
    calibration,
    forecast_metrics,
    format_table,
    historical_quantile_forecast,
    normalized_q_risk,
    pinball,
    pinball_total,
    unavailable_metrics,
    window_losses,
    zero_forecast,
)
from foxhunt.task.scoring import results_table, score
from foxhunt.task.units import BASIS_POINTS, UNIT, bp_per_unit

__all__ = [
    "BASIS_POINTS",
    "UNIT",
    "Autocast",
    "BatchLoss",
    "CrossingQuantilesWarning",
    "batch_loss",
    "bp_per_unit",
    "calibration",
    "check_coherent",
    "compare_forecasters",
    "coverage_tests",
    "crossed_forecasts",
    "diebold_mariano",
    "forecast_metrics",
    "format_table",
    "historical_quantile_forecast",
    "loss_of",
    "loss_scale",
    "normalized_q_risk",
    "pinball",
    "pinball_total",
    "results_table",
    "score",
    "unavailable_metrics",
    "window_losses",
    "zero_forecast",
]
