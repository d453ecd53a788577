"""Scoring a run's forecasts: the model and every baseline on the same windows, the metrics,
the table and the forecasts file, written once (`score_windows`) for `train`, `evaluate` and
the backtest; the baselines of a run fitted on its training span or read back from its
baseline.json (`RunBaselines`), the one reader of that file.

A layer above the run folder (`runs`, for baseline.json) and the task (`task`: the metrics
and the table), below the jobs and the doors; it runs no model (the caller hands it the
forecasts) and imports no training code.
"""

from foxhunt.scoring.baselines import (
    RunBaselines,
    fit_run_baselines,
    read_run_baselines,
    save_run_baselines,
)
from foxhunt.scoring.importance import rank_importance, run_importance
from foxhunt.scoring.oracle import with_planted_oracle
from foxhunt.scoring.score import Scored, WindowForecasts, score_windows, validation_reference
from foxhunt.scoring.windows import (
    bar_returns,
    forecast_frame,
    historical_baseline,
    window_symbols,
    window_targets,
    write_forecasts,
)

__all__ = [
    "RunBaselines",
    "Scored",
    "WindowForecasts",
    "bar_returns",
    "fit_run_baselines",
    "forecast_frame",
    "historical_baseline",
    "rank_importance",
    "read_run_baselines",
    "run_importance",
    "save_run_baselines",
    "score_windows",
    "validation_reference",
    "window_symbols",
    "window_targets",
    "with_planted_oracle",
    "write_forecasts",
]
