"""Forecasts over a whole dataset, in eval mode, batch by batch."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, cast

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from foxhunt.batch import TFTBatch
from foxhunt.data import collate_windows
from foxhunt.training.sampler import EpochBatchSampler


def make_loader(
    dataset: Dataset[TFTBatch], sampler: EpochBatchSampler, *, num_workers: int = 0
) -> DataLoader[TFTBatch]:
    # A private generator: creating a loader must not draw from the global RNG, or a
    # resumed run would see different dropout masks than an uninterrupted one.
    return DataLoader(
        dataset,
        batch_sampler=sampler,
        collate_fn=cast("Callable[[list[Any]], Any]", collate_windows),  # gets a TFTBatch
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(0),
    )


def sequential_batches(dataset: Dataset[TFTBatch], batch_size: int) -> Iterator[TFTBatch]:
    size = len(dataset)  # type: ignore[arg-type]
    sampler = EpochBatchSampler(size, batch_size=batch_size, seed=0, shuffle=False)
    yield from make_loader(dataset, sampler)


@torch.no_grad()
def predict_windows(
    model: nn.Module,
    dataset: Dataset[TFTBatch],
    *,
    batch_size: int = 512,
    device: torch.device | str = "cpu",
    autocast: contextlib.AbstractContextManager[Any] | None = None,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Quantile forecasts [N, H, Q], targets [N, H] (None without targets) and anchors [N]."""
    model.eval()
    preds, targets, anchors = [], [], []
    for batch in sequential_batches(dataset, batch_size):
        batch = batch.to(device)
        with autocast or contextlib.nullcontext():
            out = model(batch)
        preds.append(out.quantiles.float().cpu().numpy())
        if batch.target is not None:
            targets.append(batch.target.cpu().numpy())
        if batch.anchor is not None:
            anchors.append(batch.anchor.cpu().numpy())
    target = np.concatenate(targets).astype(np.float64) if targets else None
    anchor = np.concatenate(anchors) if anchors else np.arange(sum(len(p) for p in preds))
    return np.concatenate(preds).astype(np.float64), target, anchor
