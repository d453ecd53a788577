"""The learning-rate range test (Smith 2017; fastai's `lr_find`): one optimizer step per rate,
the rate growing exponentially from `start` to `end`, on shuffled training batches.

The loss read after each step is that of one fixed batch of training windows (eval mode):
a batch's own loss moves with how volatile its windows are far more than with the rate (on
the planted bars it swung 0.12-0.21 from batch to batch at rates that changed nothing). It
is smoothed (a bias-corrected exponential average, `BETA`), and the test stops once the
smoothed loss exceeds `DIVERGED` times its lowest, or a loss or a weight is not finite.
Suggested: a tenth of the rate at the lowest smoothed loss (the rate where the loss still fell
reliably), when the loss fell by at least `MIN_DROP` of where it started; else none: a loss
that never fell is no evidence for any rate (on the planted bars a tenth of the rate it
diverged at, 0.076, did not fit even the overfit check's 256 windows). The rate of the
steepest descent (of the smoothed loss against log rate, before its lowest) and the rate it
diverged at (an upper bound) are reported beside it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from foxhunt.batch import TFTBatch
from foxhunt.data import make_loader
from foxhunt.errors import FoxhuntError
from foxhunt.training.config import TrainingConfig
from foxhunt.training.inference import sequential_batches
from foxhunt.training.overfit import sample_windows
from foxhunt.training.trainer import Trainer

log = logging.getLogger("foxhunt.diagnose")

BETA = 0.9  # the smoothing; fastai's 0.98 lags by tens of steps on a 100-step test
DIVERGED = 4.0  # smoothed loss over its lowest that ends the test (fastai's rule)
MIN_DROP = 0.01  # a fall of the smoothed loss smaller than this share is noise, no minimum


@dataclass(frozen=True)
class LRRange:
    """The rates tried, the fixed batch's loss after each (raw and smoothed), each step's
    own batch loss, why the test ended ("end", "diverged" or "not finite") and the
    suggestions (NaN with under two finite steps)."""

    lrs: list[float]
    losses: list[float]
    smoothed: list[float]
    batch_losses: list[float]
    stopped: str
    lr_at_min: float
    lr_steepest: float

    @property
    def drop(self) -> float:
        """How far the smoothed loss fell below where it started, as a share of that."""
        if not self.smoothed:
            return math.nan
        if self.smoothed[0] == 0:  # a loss of 0 from the start (flat bars): nothing to fall
            return 0.0
        return (self.smoothed[0] - min(self.smoothed)) / self.smoothed[0]

    @property
    def suggested(self) -> float:
        """A tenth of the rate at the lowest loss, if the loss fell by `MIN_DROP`; else NaN."""
        return self.lr_at_min / 10 if self.drop >= MIN_DROP else math.nan

    @property
    def lr_diverged(self) -> float:
        """The last rate before the test stopped on divergence; NaN if it ran to its end."""
        return self.lrs[-1] if self.stopped != "end" and self.lrs else math.nan

    def to_dict(self) -> dict[str, Any]:
        extra = {"suggested": self.suggested, "drop": self.drop, "lr_diverged": self.lr_diverged}
        return {**asdict(self), **extra}


def rates(start: float, end: float, steps: int) -> np.ndarray:
    """`steps` rates from `start` to `end`, evenly spaced in log."""
    return start * (end / start) ** (np.arange(steps) / max(steps - 1, 1))


def smooth(losses: Sequence[float], beta: float = BETA) -> list[float]:
    """The bias-corrected exponential average of `losses` at each step."""
    out, average = [], 0.0
    for i, loss in enumerate(losses, start=1):
        average = beta * average + (1 - beta) * loss
        out.append(average / (1 - beta**i))
    return out


def suggestions(lrs: Sequence[float], smoothed: Sequence[float]) -> tuple[float, float]:
    """(rate at the lowest smoothed loss, rate of the steepest descent before it)."""
    if len(smoothed) < 2:
        return math.nan, math.nan
    lowest = int(np.argmin(smoothed))
    if lowest == 0:
        return float(lrs[0]), float(lrs[0])
    slope = np.gradient(np.asarray(smoothed[: lowest + 1]), np.log(lrs[: lowest + 1]))
    return float(lrs[lowest]), float(lrs[int(np.argmin(slope))])


def _batches(trainer: Trainer) -> Iterator[TFTBatch]:
    """The trainer's shuffled batches, epoch after epoch (none from no windows)."""
    epoch = 0
    while len(trainer.sampler):
        trainer.sampler.set_position(epoch, 0)
        yield from make_loader(trainer.train_set, batch_sampler=trainer.sampler)
        epoch += 1


def _fixed_loss(trainer: Trainer, batch: TFTBatch) -> float:
    """The loss of `batch` as the model stands, without dropout."""
    trainer.train_model.eval()
    with torch.no_grad():
        return float(trainer.compute_loss(batch.to(trainer.device)))


def lr_range_test(
    model: nn.Module,
    dataset: Dataset[TFTBatch],
    training: TrainingConfig,
    quantiles: Sequence[float],
    *,
    start: float,
    end: float,
    steps: int,
) -> LRRange:
    """Train `model` in place through the rates (see the module docstring)."""
    config = replace(training, lr_schedule="constant", validate_initial=False)
    trainer = Trainer(model, config, train_set=dataset, val_set=dataset, quantiles=quantiles)
    fixed = next(
        iter(sequential_batches(sample_windows(dataset, config.batch_size, 0), config.batch_size))
    )
    tried, losses, batch_losses, stopped = [], [], [], "end"
    every, average, lowest = max(1, steps // 10), 0.0, math.inf
    for i, (lr, batch) in enumerate(zip(rates(start, end, steps), _batches(trainer), strict=False)):
        for group in trainer.update.optimizer.param_groups:
            group["lr"] = float(lr)
        try:
            batch_loss = trainer.train_step(batch)
        except FoxhuntError:  # non-finite weights after the step
            stopped = "not finite"
            break
        loss = _fixed_loss(trainer, fixed)
        if not (math.isfinite(loss) and math.isfinite(batch_loss)):
            stopped = "not finite"
            break
        tried.append(float(lr))
        losses.append(loss)
        batch_losses.append(batch_loss)
        average = BETA * average + (1 - BETA) * loss  # as `smooth`, one step at a time
        smoothed = average / (1 - BETA ** len(losses))
        lowest = min(lowest, smoothed)
        if (i + 1) % every == 0:
            log.info("lr range test: step %d/%d, lr %.2e, loss %.5f", i + 1, steps, lr, loss)
        if smoothed > DIVERGED * lowest:
            stopped = "diverged"
            break
    curve = smooth(losses)
    at_min, steepest = suggestions(tried, curve)
    return LRRange(tried, losses, curve, batch_losses, stopped, at_min, steepest)
