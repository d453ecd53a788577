"""Forecast metrics: pinball loss, the paper's normalized q-risk, interval coverage, baselines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from foxhunt.model.loss import pinball as pinball_of_error

Array = NDArray[np.float64]


def pinball(pred: Array, target: Array, q: float | ArrayLike) -> Array:
    """Elementwise pinball loss of quantile forecasts, float64, through the model's loss
    (``foxhunt.model.loss.pinball``, the one implementation). pred, target: [N, H], or pred
    [N, H, Q] against target[..., None] with ``q`` the Q levels."""
    error = np.asarray(target, dtype=np.float64) - np.asarray(pred, dtype=np.float64)
    levels = torch.as_tensor(q, dtype=torch.float64)
    return pinball_of_error(torch.from_numpy(error), levels).numpy()


def pinball_total(pred: Array, target: Array, quantiles: Sequence[float]) -> tuple[float, int]:
    """Sum and count of the pinball losses of every window, step and quantile of ``pred``
    [N, H, Q] against ``target`` [N, H]: the mean over shards is sum(totals) / sum(counts)."""
    losses = pinball(pred, target[..., None], np.asarray(quantiles))
    return float(losses.sum()), int(losses.size)


def window_losses(pred: Array, target: Array, quantiles: Sequence[float]) -> Array:
    """[W] mean pinball loss of each window of `pred` [W, H, Q] over its steps and levels (the
    initial-weights gate, the tests of difference and the backtest all read these)."""
    losses = pinball(pred, target[..., None], np.asarray(quantiles))  # [W, H, Q]
    return np.asarray(losses.reshape(len(losses), -1).mean(axis=1), dtype=np.float64)


def calibration(pred: Array, target: Array) -> Array:
    """Share of targets at or below each quantile forecast: [Q] (calibrated: the levels)."""
    return np.asarray([np.mean(target <= pred[..., i]) for i in range(pred.shape[-1])])


def normalized_q_risk(pred: Array, target: Array, q: float) -> float:
    """Lim et al. (2021), eq. 19: 2 * sum(pinball) / sum(|y|)."""
    denominator = float(np.abs(target).sum())
    return float(2.0 * pinball(pred, target, q).sum() / max(denominator, 1e-12))


def forecast_metrics(
    pred: Array, target: Array, quantiles: Sequence[float], *, unit_scale: float = 1.0
) -> dict[str, Any]:
    """Metrics of quantile forecasts.

    Args:
        pred: [N, H, Q] quantile forecasts.
        target: [N, H] realized values, in the same units as `pred`.
        quantiles: the Q quantile levels.
        unit_scale: multiplies losses so they read in the reported unit (q-risk is unitless).
    """
    per_quantile = {
        f"{q:g}": float(pinball(pred[..., i], target, q).mean() * unit_scale)
        for i, q in enumerate(quantiles)
    }
    lower, upper = pred[..., 0], pred[..., -1]
    metrics: dict[str, Any] = {
        "mean_quantile_loss": float(np.mean(list(per_quantile.values()))),
        "quantile_loss": per_quantile,
        "coverage": {
            "interval": [float(quantiles[0]), float(quantiles[-1])],
            "nominal": float(quantiles[-1] - quantiles[0]),
            "observed": float(np.mean((target >= lower) & (target <= upper))),
        },
        "calibration": {
            f"{q:g}": float(share)
            for q, share in zip(quantiles, calibration(pred, target), strict=True)
        },
        "num_windows": int(target.shape[0]),
    }
    for q in (0.5, 0.9):
        if q in quantiles:
            metrics[f"q_risk_p{round(q * 100)}"] = normalized_q_risk(
                pred[..., list(quantiles).index(q)], target, q
            )
    return metrics


def historical_quantile_forecast(
    train_target: Array, quantiles: Sequence[float], num_windows: int
) -> Array:
    """Unconditional quantiles of the train targets per horizon step, repeated: [N, H, Q]."""
    per_step = np.quantile(train_target, quantiles, axis=0).T  # [H, Q]
    return np.broadcast_to(per_step, (num_windows, *per_step.shape)).copy()


def unavailable_metrics(
    quantiles: Sequence[float], num_windows: int, reason: str
) -> dict[str, Any]:
    """The metrics block of a forecaster that produced nothing (NaN losses, and why)."""
    nan = float("nan")
    return {
        "mean_quantile_loss": nan,
        "quantile_loss": {f"{q:g}": nan for q in quantiles},
        "coverage": {
            "interval": [float(quantiles[0]), float(quantiles[-1])],
            "nominal": float(quantiles[-1] - quantiles[0]),
            "observed": nan,
        },
        "calibration": {f"{q:g}": nan for q in quantiles},
        "num_windows": num_windows,
        "q_risk_p50": nan,
        "q_risk_p90": nan,
        "unavailable": reason,
    }


def zero_forecast(num_windows: int, horizon: int, num_quantiles: int) -> Array:
    return np.zeros((num_windows, horizon, num_quantiles))


def format_table(
    results: dict[str, dict[str, Any]],
    quantiles: Sequence[float],
    unit: str,
    differences: dict[str, Any] | None = None,
    references: dict[str, dict[str, Any]] | None = None,
) -> str:
    """A fixed-width table with one row per forecaster, best mean loss marked; with
    `differences` (task/difference.py), the DM p-value against the reference and the MCS;
    `references` (a planted market's oracles) as rows below, never marked best or tested."""
    q_cols = [f"QL@{q:g}" for q in quantiles]
    header = ["model", "mean QL", *q_cols, "q-risk P50", "q-risk P90", "coverage"]
    if differences is not None:
        header += [f"DM p vs {differences['reference']}", "MCS 90%"]
    scored = [n for n in results if np.isfinite(results[n]["mean_quantile_loss"])]  # not NaN
    best = min(scored, key=lambda name: results[name]["mean_quantile_loss"], default=None)
    rows = []
    for name, m in {**results, **(references or {})}.items():
        cov = m["coverage"]
        row = [
            name + (" *" if name == best else ""),
            f"{m['mean_quantile_loss']:.4f}",
            *(f"{m['quantile_loss'][f'{q:g}']:.4f}" for q in quantiles),
            f"{m.get('q_risk_p50', float('nan')):.4f}",
            f"{m.get('q_risk_p90', float('nan')):.4f}",
            f"{cov['observed']:.3f}/{cov['nominal']:.2f}",
        ]
        if differences is not None:
            row += _difference_cells(name, differences) if name in results else ["-", "-"]
        rows.append(row)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    note = "coverage observed/nominal of the outer interval; * = best"
    if differences is not None:
        note += "; MCS: in/out of the 90% model confidence set (its p-value)"
    lines.append(f"(losses in {unit}; {note})")
    return "\n".join(lines)


def _difference_cells(name: str, differences: dict[str, Any]) -> list[str]:
    dm = differences["dm"].get(name)
    mcs = differences["mcs"]
    p_dm = "-" if dm is None else f"{dm['pvalue']:.3f}"
    if name not in mcs["pvalues"]:
        return [p_dm, "-"]
    inside = "in" if name in mcs["included"] else "out"
    return [p_dm, f"{inside} ({mcs['pvalues'][name]:.3f})"]
