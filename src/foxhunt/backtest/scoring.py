"""A fold's forecasts (a run's `test_forecasts.parquet`) scored: metrics, CRPS, calibration by
session part and volatility regime, and the signal, for the TFT and every baseline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.backtest.signal import (
    CostModel,
    positions,
    select_decisions,
    signal_metrics,
    trade_pnl,
)
from foxhunt.task import calibration, forecast_metrics, window_losses

TFT = "tft"
#: session parts by the decision bar's local time (exchange time for ES, America/New_York)
SESSION_PARTS = {
    "overnight": None,  # everything else: 17:00 .. 09:30
    "cash_open": (9 * 60 + 30, 10 * 60 + 30),
    "midday": (10 * 60 + 30, 15 * 60),
    "close": (15 * 60, 17 * 60),
}


@dataclass(frozen=True)
class Windows:
    """The forecast frame as arrays, one row per window: origins [W], target [W, H],
    forecasts {name: [W, H, Q]}, quantile levels [Q]."""

    symbols: np.ndarray
    origins: pd.DatetimeIndex
    exits: pd.DatetimeIndex
    target: np.ndarray
    forecasts: dict[str, np.ndarray]
    quantiles: tuple[float, ...]

    @property
    def days(self) -> np.ndarray:
        return np.asarray(self.origins.date)


def windows_of(frame: pd.DataFrame) -> Windows:
    frame = frame.sort_values(["symbol", "origin", "step"], kind="stable")
    horizon = int(frame["step"].max())
    n = len(frame) // horizon
    quantiles = tuple(
        sorted(float(c[1:]) for c in frame.columns if c.startswith("q") and ":" not in c)
    )
    names = [TFT, *dict.fromkeys(c.split(":")[0] for c in frame.columns if ":q" in c)]
    forecasts = {}
    for name in names:
        prefix = "" if name == TFT else f"{name}:"
        columns = [f"{prefix}q{q:g}" for q in quantiles]
        forecasts[name] = frame[columns].to_numpy(np.float64).reshape(n, horizon, len(quantiles))
    first, last = frame.iloc[::horizon], frame.iloc[horizon - 1 :: horizon]
    return Windows(
        symbols=first["symbol"].to_numpy(),
        origins=pd.DatetimeIndex(first["origin"]),
        exits=pd.DatetimeIndex(last["target_time"]),
        target=frame["realized_bp"].to_numpy(np.float64).reshape(n, horizon),
        forecasts=forecasts,
        quantiles=quantiles,
    )


def crps(pred: np.ndarray, target: np.ndarray, quantiles: tuple[float, ...]) -> np.ndarray:
    """[W] CRPS approximated from the quantiles: CRPS = 2 * integral of the pinball loss over
    the levels, here 2 * the mean over the Q levels (coarse with few quantiles)."""
    return 2.0 * window_losses(pred, target, quantiles)


def session_part(origins: pd.DatetimeIndex) -> np.ndarray:
    minute = np.asarray(origins.hour * 60 + origins.minute)
    part = np.full(len(minute), "overnight", dtype=object)
    for name, span in SESSION_PARTS.items():
        if span is not None:
            part[(minute >= span[0]) & (minute < span[1])] = name
    return part


def volatility_tercile(w: Windows) -> np.ndarray:
    """[W] 0/1/2: tercile of the ex-ante volatility (the realized-vol baseline's first-step
    interval width, known at the decision bar; the TFT's when that baseline is absent)."""
    pred = w.forecasts.get("realized_vol", w.forecasts[TFT])
    width = pred[:, 0, -1] - pred[:, 0, 0]
    if not np.isfinite(width).all():
        width = w.forecasts[TFT][:, 0, -1] - w.forecasts[TFT][:, 0, 0]
    edges = np.quantile(width, [1 / 3, 2 / 3])
    return np.searchsorted(edges, width, side="right")


def _calibration_block(pred: np.ndarray, target: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    if not mask.any():
        return {"windows": 0}
    p, t = pred[mask], target[mask]
    return {
        "windows": int(mask.sum()),
        "coverage": float(np.mean((t >= p[..., 0]) & (t <= p[..., -1]))),
        "calibration": [float(v) for v in calibration(p, t)],
    }


def breakdown(w: Windows) -> dict[str, Any]:
    """Coverage and calibration per session part and per volatility tercile, every forecaster."""
    parts, terciles = session_part(w.origins), volatility_tercile(w)
    out: dict[str, Any] = {"session_part": {}, "volatility_tercile": {}}
    for name, pred in w.forecasts.items():
        out["session_part"][name] = {
            part: _calibration_block(pred, w.target, parts == part) for part in SESSION_PARTS
        }
        out["volatility_tercile"][name] = {
            label: _calibration_block(pred, w.target, terciles == i)
            for i, label in enumerate(("low", "mid", "high"))
        }
    return out


def forecaster_metrics(w: Windows, name: str) -> dict[str, Any]:
    pred = w.forecasts[name]
    if not np.isfinite(pred).all():
        return {"unavailable": "no forecast for some windows"}
    metrics = forecast_metrics(pred, w.target, w.quantiles)
    metrics["crps"] = float(crps(pred, w.target, w.quantiles).mean())
    return metrics


def signal_paths(w: Windows, name: str, closes: np.ndarray, costs: CostModel) -> dict[str, Any]:
    """Positions and per-bar PnL of the signal rule on forecaster `name` (signal.py)."""
    chosen, contiguous = select_decisions(w.symbols, w.origins.asi8, w.exits.asi8)
    pred, target = w.forecasts[name][chosen], w.target[chosen]
    lo, hi = pred[..., 0], pred[..., -1]
    median = pred[..., len(w.quantiles) // 2]
    move = median.sum(axis=1)
    spread = np.sqrt((((hi - lo) / 2) ** 2).sum(axis=1))  # steps taken as independent
    price0 = closes[chosen]
    pos = positions(np.nan_to_num(move), np.nan_to_num(spread), price0, costs)
    steps = np.cumsum(target, axis=1) / 1e4  # the realized log returns, in bp, compounded
    path = price0[:, None] * np.exp(np.concatenate([np.zeros((len(chosen), 1)), steps], axis=1))
    pnl = trade_pnl(pos, path, contiguous, costs)
    return {"pos": pos, "origins": w.origins[chosen], **pnl}


def signal_of(
    w: Windows, name: str, closes: np.ndarray, costs: CostModel, bars_per_year: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    paths = signal_paths(w, name, closes, costs)
    metrics = signal_metrics(
        paths["gross"], paths["net"], paths["traded"], paths["pos"], bars_per_year
    )
    return metrics, paths
