"""The model's forecasts scored next to the baselines' on the same windows, and the table
(plain arrays; foxhunt.scoring hands them the windows of a run)."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from foxhunt.task.difference import compare_forecasters, coverage_tests
from foxhunt.task.metrics import (
    forecast_metrics,
    format_table,
    unavailable_metrics,
    window_losses,
)
from foxhunt.task.units import UNIT

log = logging.getLogger("foxhunt.task")


def score(
    pred: np.ndarray,
    target: np.ndarray,
    quantiles: tuple[float, ...],
    *,
    baselines: dict[str, np.ndarray],
    days: np.ndarray | None = None,
    unavailable: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The model's metrics and each baseline's on the same windows (`baselines`: {name:
    [N, H, Q]}, foxhunt.scoring's `RunBaselines.forecasts`); everything in basis points. A
    baseline with NaN (not fitted) is reported unavailable. "differences" holds the tests of
    difference (task/difference.py) on the per-window losses: DM of the TFT against each, the
    MCS over all; `days` [N] labels each window's day for the paired day-block bootstrap and
    the MCS's block length. "coverage_tests": Kupiec and Christoffersen per forecaster and
    quantile level. `unavailable`: {name: why} baselines reported unavailable whatever their
    forecasts (absurd ones: foxhunt.scoring's `absurd_baselines`), logged by the caller."""
    unavailable = unavailable or {}
    scored = {}
    losses = {"tft": window_losses(pred, target, quantiles)}
    coverage = {"tft": coverage_tests(pred, target, quantiles)}
    for name, forecast in baselines.items():
        if name in unavailable:
            scored[name] = unavailable_metrics(quantiles, len(target), unavailable[name])
            losses[name] = np.full(len(target), np.nan)
        elif np.isfinite(forecast).all():
            scored[name] = forecast_metrics(forecast, target, quantiles)
            losses[name] = window_losses(forecast, target, quantiles)
            coverage[name] = coverage_tests(forecast, target, quantiles)
        else:
            log.warning("baseline %s has no forecast for some windows; reported as NaN", name)
            reason = "no forecast for some windows (see the log)"
            scored[name] = unavailable_metrics(quantiles, len(target), reason)
            losses[name] = np.full(len(target), np.nan)
    return {
        "unit": UNIT,
        "test": forecast_metrics(pred, target, quantiles),
        "baselines": scored,
        "differences": compare_forecasters(
            losses, reference="tft", horizon=pred.shape[1], days=days
        ),
        "coverage_tests": coverage,  # per forecaster with a forecast, per quantile level
    }


def results_table(metrics: dict[str, Any], quantiles: tuple[float, ...]) -> str:
    """The table of `score`'s metrics; with a planted market's oracles (metrics["oracle"],
    scoring/oracle.py) their rows below and the share of the gap the TFT closed."""
    rows = {"tft": metrics["test"], **metrics["baselines"]}
    oracle = metrics.get("oracle")
    references = oracle["metrics"] if oracle else None
    table = format_table(rows, quantiles, metrics["unit"], metrics.get("differences"), references)
    if oracle:
        table += "\n" + oracle_line(oracle)
    served = metrics.get("training", {}).get("served_head")
    if isinstance(served, str):
        table += "\n" + SERVED_HEAD.format(base=served)
    elif kept_initial(metrics):
        table += "\n" + KEPT_INITIAL
    return table


KEPT_INITIAL = (
    "the gate kept the initial weights: no trained epoch beat them on validation with the "
    "required confidence, so the tft row is its calibrated volatility head and the "
    "network's importances and attention are those of its untrained initialization"
)


SERVED_HEAD = (
    "the {base} base's calibrated head replaced the kept model: it beat it on validation "
    "(training.head_fallback), so the tft row is that head's forecast and the network's "
    "importances and attention are those of its untrained initialization"
)


def kept_initial(metrics: dict[str, Any]) -> bool:
    """Did training end with the initial weights (metrics.json's `training.kept_initial`)?"""
    return bool(metrics.get("training", {}).get("kept_initial"))


def _share(value: float) -> str:
    return f"{100 * value:.0f}%" if math.isfinite(value) else "no gap to close"


def oracle_line(oracle: dict[str, Any]) -> str:
    """One line: the share of the gap between the best baseline and the reachable oracle."""
    bars = oracle["metrics"]["oracle_bars"]["mean_quantile_loss"]
    latent = oracle["metrics"]["oracle_latent"]["mean_quantile_loss"]
    ci = oracle.get("gap_closed_ci95")
    within = f" (95% day-block interval {100 * ci[0]:.0f}% to {100 * ci[1]:.0f}%)" if ci else ""
    each = oracle.get("gap_closed_by_symbol")
    by_symbol = (
        "; by symbol " + ", ".join(f"{k} {_share(v)}" for k, v in each.items()) if each else ""
    )
    return (
        f"planted market: the TFT closed {100 * oracle['gap_closed']:.0f}%{within} of the gap between "
        f"the best baseline ({oracle['best_baseline']}, {oracle['best_baseline_loss']:.4f}) "
        f"and the oracle from the bars ({bars:.4f}; from the latent state {latent:.4f})"
        f"{by_symbol}"
    )
