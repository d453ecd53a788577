"""The validation loss: the mean quantile loss over every window of a dataset, scored in
shards under DDP so each rank forecasts only its share and all agree on the result."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch.utils.data import Dataset, Subset

from foxhunt.batch import TFTBatch
from foxhunt.task import pinball_total
from foxhunt.training.distributed import all_reduce_sum
from foxhunt.training.selection import Predict


def shard(dataset: Dataset[TFTBatch], rank: int, world_size: int) -> Dataset[TFTBatch]:
    """Every `world_size`-th window of `dataset`, from `rank` on (the whole of it on one)."""
    if world_size == 1:
        return dataset
    size = len(dataset)  # type: ignore[arg-type]
    return Subset(dataset, range(rank, size, world_size))


def mean_quantile_loss(
    predict: Predict,
    dataset: Dataset[TFTBatch],
    quantiles: Sequence[float],
    *,
    rank: int,
    world_size: int,
    device: torch.device,
) -> float:
    """Mean quantile loss over all windows of `dataset` (scaled units), NaN with none.

    Under DDP each rank scores every world_size-th window and the sums and counts are
    all-reduced, so every rank returns the same value (and takes the same early stop); it
    is then a collective: every rank must call it.
    """
    total, count = 0.0, 0
    part = shard(dataset, rank, world_size)
    if len(part):  # type: ignore[arg-type]
        pred, target = predict(part)
        total, count = pinball_total(pred, target, quantiles)
    if world_size > 1:
        total, reduced = all_reduce_sum([total, count], device)
        count = round(reduced)
    return total / count if count else math.nan
