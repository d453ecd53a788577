"""One function per figure; each takes the report's arrays and returns a matplotlib Figure."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure  # pyplot-free: no backend, no global figure state

from foxhunt.report.collect import ReportData
from foxhunt.scoring.importance import kind_names, rank_importance

BAND = "#4C72B0"


def loss_curves(data: ReportData) -> Figure:
    fig = Figure(figsize=(7, 3.6))
    ax = fig.subplots()
    epochs = [e["epoch"] + 1 for e in data.epochs]
    ax.plot(epochs, [e["train_loss"] for e in data.epochs], "o-", label="train")
    ax.plot(epochs, [e["val_loss"] for e in data.epochs], "s-", label="validation")
    ax.set(xlabel="epoch", ylabel="mean quantile loss (scaled)", title="Loss")
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def forecast_bands(data: ReportData, step: int = 0, windows: int = 300) -> Figure:
    """The last `windows` test forecasts for horizon step `step + 1` against what happened."""
    fc, y = data.forecasts[-windows:, step], data.targets[-windows:, step]
    x = np.arange(len(y))
    fig = Figure(figsize=(10, 3.8))
    ax = fig.subplots()
    q = data.quantiles
    ax.fill_between(x, fc[:, 0], fc[:, -1], color=BAND, alpha=0.25, label=f"P{q[0]:g}-P{q[-1]:g}")
    mid = len(q) // 2
    ax.plot(x, fc[:, mid], color=BAND, lw=1, label=f"P{q[mid]:g}")
    ax.plot(x, y, ".", color="k", ms=3, label="realized")
    ticks = np.linspace(0, len(x) - 1, 6).astype(int)
    times = data.anchor_times[-windows:]
    ax.set_xticks(ticks, [times[i].strftime("%m-%d %H:%M") for i in ticks])
    ax.set(
        ylabel="log return (bp)",
        title=f"Test forecasts, {step + 1} bar ahead, with quantile band",
    )
    ax.legend(loc="upper right", ncol=3, fontsize=8)
    ax.grid(alpha=0.3)
    return fig


TOP_INPUTS = 20  # more bars than this are unreadable; the groups panel sums the rest


def _bars(ax: Axes, names: Sequence[str], weights: np.ndarray, title: str) -> None:
    order = np.argsort(weights)[-TOP_INPUTS:]
    ax.barh(np.asarray(names)[order], weights[order], color=BAND)
    shown = f" (top {TOP_INPUTS} of {len(names)})" if len(names) > TOP_INPUTS else ""
    ax.set(title=title + shown, xlabel="mean selection weight")
    ax.grid(axis="x", alpha=0.3)


def importance(data: ReportData) -> Figure:
    """Per selection network: its inputs (the top ones) and its feature groups, summed."""
    names = kind_names(data.schema)
    weights = {
        "static": data.static_importance,
        "past": data.past_importance,
        "future": data.future_importance,
    }
    ranked = rank_importance(names, weights, data.groups)
    titles = {"static": "static", "past": "past (lookback)", "future": "future (known)"}
    kinds = [k for k in ("static", "past", "future") if k in ranked]
    rows = min(TOP_INPUTS, max(len(names[k]) for k in kinds))
    fig = Figure(figsize=(5 * len(kinds), max(4.0, 0.3 * rows + 1) + 3.5))
    axes = fig.subplots(2, len(kinds), squeeze=False, height_ratios=[max(2.0, 0.3 * rows), 2.5])
    for col, kind in enumerate(kinds):
        _bars(axes[0][col], list(names[kind]), np.asarray(weights[kind]), titles[kind])
        groups = ranked[kind]["groups"][::-1]
        labels = [f"{g['group']} ({g['inputs']})" for g in groups]
        axes[1][col].barh(labels, [g["weight"] for g in groups], color=BAND)
        axes[1][col].set(title=f"{titles[kind]}: by feature group", xlabel="summed weight")
        axes[1][col].grid(axis="x", alpha=0.3)
    fig.suptitle("Variable importance")
    fig.tight_layout()
    return fig


def attention(data: ReportData) -> Figure:
    """Mean attention of each horizon step over positions relative to the last observed bar."""
    horizon, positions = data.attention.shape
    rel = np.arange(positions) - data.lookback + 1  # 0 = last observed bar
    fig = Figure(figsize=(10, 6))
    top, bottom = fig.subplots(2, 1, height_ratios=[2, 1])
    image = top.imshow(
        data.attention,
        aspect="auto",
        cmap="viridis",
        extent=(rel[0] - 0.5, rel[-1] + 0.5, horizon + 0.5, 0.5),
    )
    fig.colorbar(image, ax=top, label="weight")
    top.set(ylabel="horizon step", title="Attention by horizon over the lookback")
    for h in range(horizon):
        bottom.plot(
            rel, data.attention[h], lw=1, label=f"step {h + 1}" if h in (0, horizon - 1) else None
        )
    bottom.axvline(0, color="k", lw=0.8, ls="--")
    bottom.set(xlabel="bars relative to the last observed bar", ylabel="weight")
    bottom.legend(fontsize=8)
    bottom.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def calibration(data: ReportData) -> Figure:
    nominal = np.asarray(data.quantiles)
    fig = Figure(figsize=(4.5, 4.5))
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfect")
    ax.plot(nominal, data.calibration, "o-", color=BAND, label="TFT (test)")
    ax.set(
        xlabel="nominal quantile",
        ylabel="observed share below forecast",
        title="Calibration",
        xlim=(0, 1),
        ylim=(0, 1),
    )
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


def memory_and_time(data: ReportData) -> Figure:
    steps = [m for m in data.memory if m["event"] == "memory_step"]
    fig = Figure(figsize=(10, 3.6))
    mem, speed = fig.subplots(1, 2)
    if steps:
        x = [m["step"] for m in steps]
        mem.plot(x, [m["used_mb"] for m in steps], label="used")
        mem.plot(x, [m["peak_mb"] for m in steps], "--", label="peak")
        speed.plot(x, [m.get("step_ms", np.nan) for m in steps], color="tab:orange")
    else:
        ends = [m for m in data.memory if m["event"] == "memory_epoch_end"]
        x = list(range(1, len(ends) + 1))
        mem.plot(x, [m["used_mb"] for m in ends], "o-", label="used at epoch end")
        speed.text(0.5, 0.5, "run shorter than --memory-log-every", ha="center")
    # memory_plan events carry no backend; the first event that does names it
    backend = next((m["backend"] for m in data.memory if "backend" in m), "?")
    mem.set(xlabel="step", ylabel="MB", title=f"Memory ({backend})")
    mem.legend()
    speed.set(xlabel="step", ylabel="ms per step (median)", title="Step time")
    for ax in (mem, speed):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


FIGURES = {
    "loss": loss_curves,
    "forecasts": forecast_bands,
    "importance": importance,
    "attention": attention,
    "calibration": calibration,
    "memory": memory_and_time,
}
