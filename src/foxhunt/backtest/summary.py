"""backtest.json's blocks: one fold's scores, and the summary over every fold's test windows
(means with a block-bootstrap 95% interval over test days, the signal, the deflated Sharpe)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from foxhunt.backtest.folds import Fold
from foxhunt.backtest.scoring import (
    TFT,
    Windows,
    breakdown,
    crps,
    forecaster_metrics,
    signal_of,
    window_losses,
    windows_of,
)
from foxhunt.backtest.signal import CostModel
from foxhunt.backtest.stats import block_bootstrap, deflated_sharpe_of, sharpe
from foxhunt.task import compare_forecasters, coverage_tests, pinball
from foxhunt.task.bootstrap import day_blocks

if TYPE_CHECKING:
    from foxhunt.backtest.config import BacktestConfig


def origin_closes(w: Windows, closes: pd.Series) -> np.ndarray:
    """[W] the close at each window's origin bar."""
    index = pd.MultiIndex.from_arrays([w.symbols.astype(str), w.origins])
    return closes.reindex(index).to_numpy(np.float64)


def fold_block(
    fold: Fold,
    windows: dict[str, int],
    frame: pd.DataFrame,
    closes: pd.Series,
    costs: CostModel,
    bars_per_year: float,
) -> dict[str, Any]:
    """One entry of backtest.json's "folds"."""
    w = windows_of(frame)
    prices = origin_closes(w, closes)
    baselines = [name for name in w.forecasts if name != TFT]
    return {
        **fold.to_dict(),
        "windows": windows,
        "metrics": forecaster_metrics(w, TFT),
        "baselines": {name: forecaster_metrics(w, name) for name in baselines},
        "calibration": breakdown(w),
        "differences": differences(w),
        "coverage_tests": {name: coverage_tests(p, w.target, w.quantiles) for name, p in ok(w)},
        "signal": {
            name: signal_of(w, name, prices, costs, bars_per_year)[0] for name in w.forecasts
        },
    }


def ok(w: Windows) -> list[tuple[str, np.ndarray]]:
    """(name, forecast) of every forecaster with a forecast for every window."""
    return [(name, pred) for name, pred in w.forecasts.items() if np.isfinite(pred).all()]


def differences(w: Windows, resamples: int = 2000) -> dict[str, Any]:
    """The tests of difference (task/difference.py) on these windows' losses: DM of the TFT
    against each baseline with a paired day-block interval, and the 90% MCS over all."""
    losses = {
        name: window_losses(pred, w.target, w.quantiles) for name, pred in w.forecasts.items()
    }
    return compare_forecasters(
        losses,
        reference=TFT,
        horizon=w.target.shape[1],
        days=day_blocks(w.origins),
        resamples=resamples,
    )


def _interval(values: np.ndarray, days: np.ndarray, resamples: int) -> dict[str, Any]:
    ok = np.isfinite(values)
    if not ok.any():
        return {"mean": float("nan"), "ci95": [float("nan"), float("nan")]}
    low, high = block_bootstrap(values[ok], days[ok], resamples)
    return {"mean": float(values[ok].mean()), "ci95": [low, high]}


def _quantile_losses(w: Windows, pred: np.ndarray) -> dict[str, float]:
    """{level: mean pinball loss} over the windows with a forecast (NaN rows: unfitted)."""
    ok = np.isfinite(pred).all(axis=(1, 2))
    if not ok.any():
        return {f"{q:g}": float("nan") for q in w.quantiles}
    p, t = pred[ok], w.target[ok]
    return {f"{q:g}": float(pinball(p[..., i], t, q).mean()) for i, q in enumerate(w.quantiles)}


def _scores(w: Windows, name: str, resamples: int) -> dict[str, Any]:
    pred, days = w.forecasts[name], w.days
    covered = (w.target >= pred[..., 0]) & (w.target <= pred[..., -1])
    return {
        "mean_quantile_loss": _interval(
            window_losses(pred, w.target, w.quantiles), days, resamples
        ),
        "quantile_loss": _quantile_losses(w, pred),
        "crps": _interval(crps(pred, w.target, w.quantiles), days, resamples),
        "coverage": _interval(covered.mean(axis=1).astype(np.float64), days, resamples),
    }


def summarize(
    frames: list[pd.DataFrame], closes: pd.Series, bt: BacktestConfig, bars_per_year: float
) -> dict[str, Any]:
    """Every fold's test windows together."""
    w = windows_of(pd.concat(frames, ignore_index=True))
    resamples = bt.resamples
    tft_losses = window_losses(w.forecasts[TFT], w.target, w.quantiles)
    out: dict[str, Any] = {**_scores(w, TFT, resamples), "baselines": {}, "tft_minus": {}}
    point = forecaster_metrics(w, TFT)
    out["q_risk_p50"], out["q_risk_p90"] = point.get("q_risk_p50"), point.get("q_risk_p90")
    for name in w.forecasts:
        if name == TFT:
            continue
        out["baselines"][name] = _scores(w, name, resamples)
        diff = tft_losses - window_losses(w.forecasts[name], w.target, w.quantiles)
        out["tft_minus"][name] = {"mean_quantile_loss": _interval(diff, w.days, resamples)}
    out["calibration"] = breakdown(w)
    out["differences"] = differences(w, resamples)  # pooled over every fold's test windows
    out["coverage_tests"] = {name: coverage_tests(p, w.target, w.quantiles) for name, p in ok(w)}
    prices = origin_closes(w, closes)
    signal, streams = {}, {}
    for name in w.forecasts:
        metrics, paths = signal_of(w, name, prices, bt.costs, bars_per_year)
        signal[name], streams[name] = metrics, paths["net"].ravel()
    out["signal"] = signal
    trial_sharpes = np.asarray([sharpe(s) for s in streams.values()]) if bt.trials > 1 else None
    out["deflated_sharpe"] = deflated_sharpe_of(
        streams[TFT], trials=bt.trials, trial_sharpes=trial_sharpes
    )
    out["windows"] = len(w.target)
    return out
