"""The training objective: one batch forwarded through the model, its quantile loss taken.

The trainer's step (whose first forward the startup measurement of checkpointing watches),
the memory planner's probe and the benchmarks all run this one forward + loss; the pinball
formula itself is the model's (``foxhunt.model.loss``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.distributed.nn.functional import all_reduce
from torch.nn.parallel import DistributedDataParallel

from foxhunt.batch import TFTBatch
from foxhunt.errors import FoxhuntError
from foxhunt.model.loss import quantile_loss, range_loss

#: the loss of one batch through a model the callable closes over (see :func:`loss_of`)
BatchLoss = Callable[[TFTBatch], Tensor]
#: returns a fresh autocast context (the trainer's precision), or None: full precision
Autocast = Callable[[], contextlib.AbstractContextManager[Any]]


def loss_scale(batch: TFTBatch, weighting: str) -> Tensor | None:
    """What divides each window's error: its baseline scale under ``"inverse_scale"``."""
    if weighting != "inverse_scale":
        return None
    if batch.scale is None:
        raise FoxhuntError(
            "loss_weighting 'inverse_scale' needs windows with a baseline scale "
            "(a version-2 preprocessor); retrain, or use loss_weighting 'none'"
        )
    return batch.scale.float()


def batch_loss(
    model: nn.Module,
    batch: TFTBatch,
    quantiles: Sequence[float],
    *,
    weighting: str = "none",
    autocast: Autocast | None = None,
    range_weight: float = 0.0,
) -> Tensor:
    """Mean quantile loss of ``model`` on ``batch``, a scalar with its graph, plus
    ``range_weight`` x the range loss where the batch has its bars' ranges and the model a
    volatility adjustment of its own (the "baseline" output's log scale; model/loss.py). The
    forward runs inside ``autocast()`` when given; the loss is taken in float32 outside it."""
    assert batch.target is not None, "training batches carry targets"
    scale = loss_scale(batch, weighting)  # before the forward: a bad setting fails at once
    with autocast() if autocast is not None else contextlib.nullcontext():
        out = model(batch)
    loss = quantile_loss(out.quantiles.float(), batch.target, quantiles, scale)
    volatility = out.log_volatility
    if range_weight and volatility is not None and batch.target_range is not None:
        assert batch.scale is not None  # the baseline output has checked it
        across, shares = _across_ranks(model)
        ranged = range_loss(
            volatility.float(), batch.scale.float(), batch.target_range,
            across=across, shares=shares,
        )  # fmt: skip
        loss = loss + range_weight * ranged
    return loss


def _across_ranks(model: nn.Module) -> tuple[Callable[[Tensor], Tensor] | None, int]:
    """(a sum over the data-parallel ranks, their number) when `model` is DDP-wrapped: the
    range loss's batch mean is then the global batch's; else (None, 1)."""
    if not isinstance(model, DistributedDataParallel):
        return None, 1

    def across(values: Tensor) -> Tensor:  # differentiable: the mean's gradient crosses ranks
        return all_reduce(values, group=model.process_group)

    return across, torch.distributed.get_world_size(model.process_group)


def loss_of(
    model: nn.Module,
    quantiles: Sequence[float],
    *,
    weighting: str = "none",
    autocast: Autocast | None = None,
    range_weight: float = 0.0,
) -> BatchLoss:
    """:func:`batch_loss` bound to ``model``: the loss callable the memory tools measure."""
    return functools.partial(
        batch_loss,
        model,
        quantiles=quantiles,
        weighting=weighting,
        autocast=autocast,
        range_weight=range_weight,
    )
