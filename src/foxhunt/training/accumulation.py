"""Gradient accumulation: a batch's gradients computed micro-batch by micro-batch, so a step
fits in memory (`Trainer.micro_batch_size`, set from the memory plan: training/memory.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from torch import Tensor, nn

from foxhunt.batch import TFTBatch


def accumulate_gradients(
    train_model: nn.Module,
    batch: TFTBatch,
    micro: int,
    *,
    loss_of: Callable[[TFTBatch], Tensor],
    backward: Callable[[Tensor], None],
) -> float:
    """Forward and backward micro-batch by micro-batch, each loss weighted by its share of the
    batch: the summed gradients are the full batch's (the loss is a mean), and so is the
    returned loss. Under DDP (`train_model` has `no_sync`) gradients are all-reduced only with
    the last micro-batch's backward."""
    n = batch.batch_size
    starts = range(0, n, micro)
    value = 0.0
    for i, start in enumerate(starts):
        part = batch.slice(start, min(start + micro, n))
        last = i == len(starts) - 1
        sync = getattr(train_model, "no_sync", None)
        with contextlib.nullcontext() if last or sync is None else sync():
            loss = loss_of(part) * (part.batch_size / n)
            value += float(loss.detach())
            backward(loss)
        del loss
    return value
