"""The learning-rate schedule (`TrainingConfig.lr_schedule`), stepped once per optimizer step.

- ``constant``: no scheduler at all, so such runs are the runs of before schedules existed.
- ``cosine``: linear warm-up from ``lr / warmup`` to ``lr`` over the warm-up steps, then a
  half cosine down to ``min_lr`` at the last planned step (where it stays).
- ``onecycle``: ``torch.optim.lr_scheduler.OneCycleLR`` (cosine annealing, momentum cycled in
  AdamW's beta1), from lr / 25 up to ``lr`` over the warm-up (at least 2 steps), then down
  to ``min_lr`` (or lr / 25e4); it needs 3 planned steps or more.

The plan (total steps = epochs x batches per epoch) is part of the scheduler's state, so a
checkpoint carries it and a resumed run follows the schedule it started with, even if
``--epochs`` changed; steps past the plan keep its last learning rate.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import torch
from torch.optim.lr_scheduler import LambdaLR, LRScheduler, OneCycleLR

from foxhunt.errors import ConfigError
from foxhunt.training.config import TrainingConfig

log = logging.getLogger("foxhunt.train")


def planned_steps(config: TrainingConfig, batches_per_epoch: int) -> int:
    """Optimizer steps of the whole run: epochs x (batches per epoch, capped by
    max_steps_per_epoch), as `Trainer.train_epoch` takes them."""
    cap = config.max_steps_per_epoch or batches_per_epoch
    return max(1, config.epochs * min(cap, batches_per_epoch))


def warmup_steps(config: TrainingConfig, total: int) -> int:
    if config.warmup_steps is not None:
        return min(config.warmup_steps, total)
    return min(round(config.warmup_fraction * total), total)


class WarmupCosine:
    """LambdaLR's factor at step `step`; plain numbers only, so LambdaLR saves them in its
    state_dict (it keeps the ``__dict__`` of a callable object) and a resume restores them."""

    def __init__(self, warmup: int, total: int, floor: float) -> None:
        self.warmup, self.total, self.floor = warmup, total, floor

    def __call__(self, step: int) -> float:
        peak = max(self.warmup - 1, 0)  # the step at lr: the warm-up's last, or the first
        if step < peak:
            return (step + 1) / self.warmup
        progress = min(1.0, (step - peak) / max(1, self.total - 1 - peak))
        return self.floor + (1.0 - self.floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_scheduler(
    optimizer: torch.optim.Optimizer, config: TrainingConfig, total: int
) -> LRScheduler | None:
    """The scheduler `config.lr_schedule` names over `total` steps; None for "constant"."""
    warmup = warmup_steps(config, total)
    if config.lr_schedule == "cosine":
        return LambdaLR(optimizer, WarmupCosine(warmup, total, config.min_lr / config.lr))
    if config.lr_schedule == "onecycle":
        if total < 3:  # OneCycleLR divides by each phase's length: two phases of >= 1 step
            raise ConfigError(
                f"training.lr_schedule 'onecycle' needs at least 3 planned steps, this run has "
                f"{total} (epochs x steps per epoch); use more steps or lr_schedule 'cosine'"
            )
        start = config.lr / 25.0  # OneCycleLR's div_factor
        final = config.min_lr if config.min_lr > 0 else start / 1e4
        return OneCycleLR(
            optimizer,
            max_lr=config.lr,
            total_steps=total,
            pct_start=min(max(warmup, 2), total - 1) / total,  # it peaks at step warmup - 1
            final_div_factor=start / final,
        )
    return None


def scheduler_total(scheduler: LRScheduler) -> int:
    if isinstance(scheduler, OneCycleLR):
        return int(scheduler.total_steps)
    assert isinstance(scheduler, LambdaLR)
    return int(scheduler.lr_lambdas[0].total)  # type: ignore[attr-defined]


def step_scheduler(scheduler: LRScheduler | None) -> None:
    """One optimizer step done: advance the schedule, never past its plan (OneCycleLR
    raises there; a resume that added epochs keeps the last learning rate)."""
    if scheduler is not None and scheduler.last_epoch < scheduler_total(scheduler) - 1:
        scheduler.step()


def load_scheduler(scheduler: LRScheduler, state: dict[str, Any]) -> None:
    """Restore a saved schedule, plan included; say so when this run would plan another."""
    planned = scheduler_total(scheduler)
    scheduler.load_state_dict(state)
    saved = scheduler_total(scheduler)
    if saved != planned:
        log.warning(
            "the learning-rate schedule was planned for %d steps when the run started; this "
            "run would plan %d (--epochs changed?): it keeps the saved plan, and steps past "
            "it run at its last learning rate",
            saved,
            planned,
        )
