"""The overfit check: can the network fit a few hundred training windows at all?

A network that cannot drive its training loss well below where it starts on a small fixed
sample cannot learn from the whole set either: a bug, a dead module or a learning rate far
off, not too little data. The check fits one batch of `windows` seeded training windows for
`steps` optimizer steps (the trainer's own step: AdamW, clipping, precision) and compares the
loss on them at the end (eval mode) with the head's, the untrained network's after the
baseline output's calibration (training/calibrate.py) on those windows: PASS when the ratio
is at most `threshold`. Without weight decay, and the caller builds the model without
dropout: the question is whether the network can fit, not whether it generalizes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, Subset

from foxhunt.batch import TFTBatch
from foxhunt.training.calibrate import calibrate_baseline
from foxhunt.training.config import TrainingConfig
from foxhunt.training.diagnostics import TrainingDiagnostics
from foxhunt.training.trainer import Trainer

log = logging.getLogger("foxhunt.diagnose")


@dataclass(frozen=True)
class OverfitResult:
    """What the check measured. `diagnostics`: the run's mean gradient norm and update ratio
    per module and the selection entropies at its end (training/diagnostics.py)."""

    windows: int
    steps: int
    lr: float
    head_loss: float
    final_loss: float
    threshold: float
    diagnostics: dict[str, float] = field(default_factory=dict)
    losses: list[float] = field(default_factory=list)  # each step's (dropout-free) batch loss

    @property
    def ratio(self) -> float:
        return self.final_loss / self.head_loss if self.head_loss > 0 else math.nan

    @property
    def passed(self) -> bool:
        return math.isfinite(self.ratio) and self.ratio <= self.threshold

    @property
    def verdict(self) -> str:
        """PASS, FAIL, or NOTHING TO FIT: the head's loss is already 0 (flat bars: every
        target 0), where a ratio means nothing (it was a division by zero)."""
        if self.head_loss == 0:
            return "NOTHING TO FIT"
        return "PASS" if self.passed else "FAIL"

    @property
    def still_falling(self) -> bool:
        """Whether the loss fell by over 2% in the last half of the steps: more steps (or a
        higher rate) would have taken it further."""
        half = self.losses[len(self.losses) // 2 :]
        return len(half) > 1 and half[-1] < 0.98 * half[0]

    def to_dict(self) -> dict[str, Any]:
        extra = {"ratio": self.ratio, "verdict": self.verdict, "still_falling": self.still_falling}
        return {**asdict(self), **extra}


class StepProgress:
    """A log line every tenth of `total` steps (long checks show they are moving); keeps
    each step's loss."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.done = what, total, 0
        self.every = max(1, total // 10)
        self.losses: list[float] = []

    def on_step_end(self, trainer: Any, loss: float) -> None:
        self.done += 1
        self.losses.append(loss)
        if self.done % self.every == 0 or self.done == self.total:
            log.info("%s: step %d/%d, loss %.5f", self.what, self.done, self.total, loss)


def sample_windows(dataset: Dataset[TFTBatch], windows: int, seed: int) -> Subset[TFTBatch]:
    """`windows` of `dataset` (all, if it has fewer), drawn with `seed`, in time order."""
    size = len(dataset)  # type: ignore[arg-type]
    generator = torch.Generator().manual_seed(seed)
    chosen = torch.randperm(size, generator=generator)[: min(windows, size)]
    return Subset(dataset, sorted(chosen.tolist()))


def overfit_check(
    model: nn.Module,
    dataset: Dataset[TFTBatch],
    training: TrainingConfig,
    quantiles: Sequence[float],
    *,
    windows: int,
    steps: int,
    threshold: float,
    lr: float | None = None,
) -> OverfitResult:
    """Fit `windows` windows of `dataset` for `steps` full-batch steps at `lr` (default the
    training lr; 0 is allowed here: a check that must fail); see the module docstring."""
    subset = sample_windows(dataset, windows, training.seed)
    if training.calibrate:
        calibrate_baseline(model, subset, quantiles, loss_weighting=training.loss_weighting)
    config = replace(
        training,
        batch_size=len(subset),
        max_steps_per_epoch=None,
        validate_initial=False,
        lr_schedule="constant",
        patience=0,
        weight_decay=0.0,
        range_weight=0.0,  # it fits the loss it reads: memorizing, not learning volatility
    )
    diagnostics = TrainingDiagnostics(windows=len(subset))
    progress = StepProgress("overfit check", steps)
    trainer = Trainer(
        model,
        config,
        train_set=subset,
        val_set=subset,
        quantiles=quantiles,
        callbacks=(diagnostics, progress),
    )
    rate = training.lr if lr is None else lr
    for group in trainer.update.optimizer.param_groups:
        group["lr"] = rate
    head_loss = trainer.evaluate(subset)
    diagnostics.on_epoch_start(trainer)
    for _ in range(steps):  # one batch per epoch: the whole sample
        trainer.train_epoch()
        trainer.state.epoch, trainer.state.batch_in_epoch = trainer.state.epoch + 1, 0
    record: dict[str, Any] = {}
    diagnostics.on_epoch_end(trainer, record)
    return OverfitResult(
        windows=len(subset),
        steps=steps,
        lr=rate,
        head_loss=head_loss,
        final_loss=trainer.evaluate(subset),
        threshold=threshold,
        diagnostics=record,
        losses=progress.losses,
    )
