"""DIR/report/backtest.html: per-fold loss against the baselines, calibration by session part,
equity curves net of costs and drawdowns, for the TFT and every baseline (PNGs inline)."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # pyplot-free, as report/figures.py

from foxhunt.backtest.scoring import TFT, signal_paths, windows_of
from foxhunt.backtest.signal import CostModel
from foxhunt.backtest.summary import origin_closes
from foxhunt.data.pipeline import load_frame
from foxhunt.report.html import png
from foxhunt.runs import FORECASTS_FILE, RunConfig
from foxhunt.storage import atomic_write_bytes


def fold_losses(result: dict[str, Any]) -> Figure:
    fig = Figure(figsize=(8, 3.5))
    ax = fig.add_subplot()
    folds = result["folds"]
    names = [TFT, *folds[0]["baselines"]]
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        values = [
            (f["metrics"] if name == TFT else f["baselines"][name]).get("mean_quantile_loss")
            for f in folds
        ]
        x = np.arange(len(folds)) + i * width
        ax.bar(x, [np.nan if v is None else v for v in values], width, label=name)
    ax.set_xticks(np.arange(len(folds)) + 0.4 - width / 2, [f"fold {f['index']}" for f in folds])
    ax.set_ylabel("mean quantile loss (bp)")
    ax.legend(fontsize=7)
    return fig


def session_coverage(result: dict[str, Any]) -> Figure:
    fig = Figure(figsize=(8, 3.5))
    ax = fig.add_subplot()
    parts = result["summary"]["calibration"]["session_part"]
    names = list(parts)
    labels = list(parts[TFT])
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        values = [parts[name][p].get("coverage") for p in labels]
        ax.bar(np.arange(len(labels)) + i * width, [np.nan if v is None else v for v in values],
               width, label=name)  # fmt: skip
    nominal = result["folds"][0]["metrics"].get("coverage", {}).get("nominal")
    if nominal is not None:
        ax.axhline(nominal, color="k", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2, labels)
    ax.set_ylabel("outer-interval coverage")
    ax.legend(fontsize=7)
    return fig


def equity(curves: dict[str, np.ndarray]) -> Figure:
    fig = Figure(figsize=(8, 5))
    top, bottom = fig.subplots(2, 1, sharex=True)
    for name, pnl in curves.items():
        curve = np.cumsum(pnl)
        top.plot(curve, lw=0.9, label=name)
        bottom.plot(curve - np.maximum.accumulate(np.maximum(curve, 0)), lw=0.9, label=name)
    top.set_ylabel("net PnL")
    bottom.set_ylabel("drawdown")
    bottom.set_xlabel("bars held, all folds in order")
    top.legend(fontsize=7)
    return fig


def net_curves(output_dir: Path, result: dict[str, Any]) -> dict[str, np.ndarray]:
    config = RunConfig.from_dict(result["config"]["run"])
    frame = load_frame(config.data)
    closes = pd.Series(
        frame["close"].to_numpy(np.float64),
        index=pd.MultiIndex.from_arrays([frame["symbol"].astype(str), frame["timestamp"]]),
    ).sort_index()
    frames = [
        pd.read_parquet(output_dir / "folds" / str(f["index"]) / "run" / FORECASTS_FILE)
        for f in result["folds"]
    ]
    w = windows_of(pd.concat(frames, ignore_index=True))
    costs = CostModel(**result["config"]["costs"])
    prices = origin_closes(w, closes)
    return {name: signal_paths(w, name, prices, costs)["net"].ravel() for name in w.forecasts}


def write_backtest_report(output_dir: Path, result: dict[str, Any]) -> Path:
    figures = {
        "Mean quantile loss per fold, TFT and baselines": fold_losses(result),
        "Outer-interval coverage by session part (all folds; dashed: nominal)": session_coverage(
            result
        ),
        "Equity net of costs and drawdown of the signal rule": equity(
            net_curves(output_dir, result)
        ),
    }
    s = result["summary"]
    body = [
        "<h1>foxhunt walk-forward backtest</h1>",
        f"<p>{len(result['folds'])} folds; TFT mean quantile loss "
        f"{html.escape(str(s['mean_quantile_loss']))}; signal net Sharpe "
        f"{s['signal'][TFT]['sharpe']}, deflated {s['deflated_sharpe']['value']}.</p>",
    ]
    for caption, fig in figures.items():
        data = base64.b64encode(png(fig)).decode()
        body.append(f"<h2>{html.escape(caption)}</h2><img src='data:image/png;base64,{data}'>")
    path = output_dir / "report" / "backtest.html"
    page = "<!doctype html><html><meta charset='utf-8'><body>" + "".join(body) + "</body></html>"
    atomic_write_bytes(path, page.encode())
    return path
