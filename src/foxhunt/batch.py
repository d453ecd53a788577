"""Typed batches: what flows from the data pipeline into the model."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch
from torch import Tensor


@dataclass(frozen=True, slots=True)
class TFTBatch:
    """One batch of windows.

    Shapes use B = batch, L = lookback, H = horizon, S = static reals,
    C = static categoricals, P = past inputs (observed + known), F = known future inputs.
    """

    static: Tensor  # [B, S] float
    past: Tensor  # [B, L, P] float
    future: Tensor  # [B, H, F] float
    target: Tensor | None = None  # [B, H] float, scaled target returns
    static_categorical: Tensor | None = None  # [B, C] int64 category codes
    anchor: Tensor | None = None  # [B] int64: row of the last observed bar of each window
    #: [B, H] float: the rolling-volatility baseline's standard deviation of each target, in
    #: scaled target units; the "baseline" output form forecasts relative to it
    scale: Tensor | None = None
    #: [B, K] float: log(fast / base volatility) at the anchor, K = 1 or 0 signals
    #: (DataConfig.fast_window); the "baseline" output learns how much to lean on it
    vol_signal: Tensor | None = None
    #: [B, H] float: log of each target bar's log range log(high / low), NaN where the bar
    #: has none; a training target only (the range loss, task/loss.py), never an input
    target_range: Tensor | None = None

    @property
    def batch_size(self) -> int:
        return int(self.past.shape[0])

    def to(self, device: torch.device | str, non_blocking: bool = False) -> TFTBatch:
        moved = {
            f.name: (v.to(device, non_blocking=non_blocking) if isinstance(v, Tensor) else v)
            for f in fields(self)
            if (v := getattr(self, f.name)) is not None
        }
        return replace(self, **moved)

    def pin_memory(self) -> TFTBatch:
        """Every tensor in page-locked memory: what a DataLoader with `pin_memory=True` calls
        in its pinning thread, so that `to(cuda, non_blocking=True)` copies asynchronously."""
        pinned = {
            f.name: v.pin_memory() for f in fields(self) if (v := getattr(self, f.name)) is not None
        }
        return replace(self, **pinned)

    def slice(self, start: int, stop: int) -> TFTBatch:
        """Rows [start, stop) of every tensor: micro-batches for gradient accumulation."""
        parts = {
            f.name: v[start:stop] for f in fields(self) if (v := getattr(self, f.name)) is not None
        }
        return replace(self, **parts)
