"""Helpers of the quantization tests: a tiny TFT on synthetic bars and a training loop."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn

from foxhunt import TFTBatch, TFTConfig, quantile_loss
from foxhunt.data import PreparedData
from foxhunt.training.inference import sequential_batches


def batches(data: PreparedData, size: int = 32) -> Iterator[TFTBatch]:
    """Training windows in order, forever."""
    while True:
        yield from sequential_batches(data.train, size)


def loss_of(model: nn.Module, batch: TFTBatch, cfg: TFTConfig) -> Tensor:
    assert batch.target is not None
    return quantile_loss(model(batch).quantiles, batch.target, cfg.quantiles)


def train_steps(model: nn.Module, data: PreparedData, cfg: TFTConfig, steps: int) -> nn.Module:
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _, batch in zip(range(steps), batches(data), strict=False):
        optimizer.zero_grad()
        loss_of(model, batch, cfg).backward()
        optimizer.step()
    return model.eval()


def predict(model: nn.Module, data: PreparedData) -> Tensor:
    """Forecasts [N, H, Q] of the validation windows."""
    model.eval()
    with torch.no_grad():
        return torch.cat([model(b).quantiles for b in sequential_batches(data.validation, 256)])
