"""A run's windows as the baselines and the forecasts file see them.

The returns a baseline sees are the very targets the TFT is scored on (the dataset's scaled
targets times the target scale), so every forecaster is measured on the same numbers.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.baselines import BarReturns
from foxhunt.data import Preprocessor, WindowDataset, make_loader
from foxhunt.data.windows import gap_flags
from foxhunt.scoring.ranges import log_range_bp
from foxhunt.storage import atomic_write_bytes
from foxhunt.task import bp_per_unit, historical_quantile_forecast


def bar_returns(
    dataset: WindowDataset, preprocessor: Preprocessor, *, train_end: pd.Timestamp | None
) -> BarReturns:
    """Every row behind `dataset` (all splits share them); rows before `train_end` are train."""
    if dataset.target_values is None:
        raise ValueError("the baselines need a dataset with targets")
    scale = bp_per_unit(preprocessor)
    returns = dataset.target_values.numpy().astype(np.float64) * scale
    codes = dataset.symbol_codes.numpy()
    times_ns = dataset.timestamps.as_unit("ns").asi8
    gaps = gap_flags(codes, times_ns, preprocessor.max_gap_ns)
    train = np.ones(len(codes), dtype=bool) if train_end is None else times_ns < train_end.value
    return BarReturns(
        times=dataset.timestamps,
        returns_bp=returns,
        symbol_codes=codes,
        usable=np.isfinite(returns) & ~gaps,
        train=train,
        range_bp=log_range_bp(dataset, preprocessor),
    )


def window_targets(dataset: WindowDataset) -> np.ndarray:
    """Scaled targets [N, H] of every window of a split, in window order."""
    batches = make_loader(dataset, batch_size=4096)  # sequential
    parts = [b.target.numpy() for b in batches if b.target is not None]
    return np.concatenate(parts).astype(np.float64)


def historical_baseline(train_set: WindowDataset, quantiles: Sequence[float]) -> np.ndarray:
    """Per-step unconditional quantiles [H, Q] of the train targets, in scaled target units."""
    return historical_quantile_forecast(window_targets(train_set), tuple(quantiles), 1)[0]


def window_symbols(dataset: WindowDataset) -> np.ndarray:
    """[W] each window's symbol name (its anchor bar's), in the dataset's order."""
    codes = dataset.symbol_codes.numpy()[dataset.anchors.numpy()]
    return np.asarray(dataset.symbols, dtype=object)[codes]


def forecast_frame(
    dataset: WindowDataset,
    pred: np.ndarray,
    target: np.ndarray,
    quantiles: Sequence[float],
    baselines: dict[str, np.ndarray],
) -> pd.DataFrame:
    """One row per window and step: symbol, origin, step, target_time, realized_bp, the TFT's
    `q<level>` and each baseline's `<name>:q<level>` (all in basis points)."""
    anchors = dataset.anchors.numpy()
    windows, horizon = target.shape
    steps = np.arange(1, horizon + 1)
    rows = (anchors[:, None] + steps).ravel()  # [W*H] target rows
    names = window_symbols(dataset)
    columns: dict[str, object] = {
        "symbol": np.repeat(names, horizon),
        "origin": dataset.timestamps[np.repeat(anchors, horizon)],
        "step": np.tile(steps, windows),
        "target_time": dataset.timestamps[rows],
        "realized_bp": target.ravel(),
    }
    for prefix, values in {"": pred, **{f"{k}:": v for k, v in baselines.items()}}.items():
        for i, q in enumerate(quantiles):
            columns[f"{prefix}q{q:g}"] = values[..., i].ravel()
    return pd.DataFrame(columns)


def write_forecasts(path: Path, frame: pd.DataFrame) -> None:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    atomic_write_bytes(path, buffer.getvalue())
