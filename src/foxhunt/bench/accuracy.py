"""How close the planner's predicted peak comes to a real training step's, plan by plan.

:func:`check_predictions` builds the model of a config, probes it once
(:func:`~foxhunt.memory.plan.measure_costs` on one random batch), then for each plan predicts
the peak (:func:`~foxhunt.memory.budget.predict_peak`) and measures a real
``Trainer.train_step`` on another batch with that plan applied: checkpointing, and
micro-batches with gradient accumulation. ``foxhunt bench-memory --predictions`` prints it;
``tests/memory/test_plan.py`` asserts every plan of the CPU reference within 15%.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from foxhunt.batch import TFTBatch
from foxhunt.bench.memory import random_batch
from foxhunt.memory.budget import MB, predict_peak
from foxhunt.memory.moments import batch_tensors
from foxhunt.memory.peak import LiveStorageTracker
from foxhunt.memory.plan import measure_costs
from foxhunt.model.config import SEGMENTS, TFTConfig
from foxhunt.model.factory import DEFAULT_MODEL, build_model
from foxhunt.task import loss_of
from foxhunt.training.config import TrainingConfig
from foxhunt.training.trainer import Trainer
from foxhunt.transforms import apply_checkpointing, apply_model_transforms


@dataclass(frozen=True)
class PlanCase:
    checkpointing: tuple[str, ...]  # segment names; () = none
    micro_batch: int | None = None  # None: the whole batch at once

    def describe(self, batch_size: int) -> str:
        what = {(): "no checkpointing", SEGMENTS: "every segment"}.get(
            self.checkpointing, " + ".join(self.checkpointing)
        )
        if self.micro_batch is None or self.micro_batch >= batch_size:
            return f"{what}, batch {batch_size}"
        steps = -(-batch_size // self.micro_batch)
        return f"{what}, micro-batches of {self.micro_batch} x {steps}"


#: plain, checkpointed and micro-batched: the planner's three kinds of plan
REFERENCE_CASES = (
    PlanCase(()),
    PlanCase(("past_vsn",)),
    PlanCase(SEGMENTS),
    PlanCase(("past_vsn",), 8),
    PlanCase(SEGMENTS, 4),
)


@dataclass(frozen=True)
class PeakCheck:
    case: PlanCase
    predicted: float  # bytes
    measured: int  # bytes

    @property
    def error(self) -> float:
        """Relative error of the prediction (> 0: predicted more than measured)."""
        return (self.predicted - self.measured) / self.measured


def check_predictions(
    cfg: TFTConfig,
    batch_size: int,
    cases: Sequence[PlanCase] = REFERENCE_CASES,
    *,
    seed: int = 0,
) -> list[PeakCheck]:
    """Predicted vs measured peak of one training step of ``cfg`` for each plan, on CPU."""
    torch.manual_seed(seed)
    model = apply_model_transforms(build_model(DEFAULT_MODEL, cfg), cfg)
    probe = random_batch(cfg, batch_size, seed=seed + 2)
    table = measure_costs(model, probe, loss_of(model, cfg.quantiles), repeats=1)
    del probe
    training = TrainingConfig(batch_size=batch_size, device="cpu")
    trainer = Trainer(
        model, training, train_set=_NoWindows(), val_set=_NoWindows(), quantiles=cfg.quantiles
    )
    batch = random_batch(cfg, batch_size, seed=seed + 1)
    checks = []
    for case in cases:
        micro = case.micro_batch or batch_size
        apply_checkpointing(model, case.checkpointing)
        trainer.micro_batch_size = case.micro_batch
        predicted = predict_peak(table, case.checkpointing, micro, batch_size=batch_size)
        checks.append(PeakCheck(case, predicted, measure_step_peak(trainer, batch)))
    return checks


def measure_step_peak(trainer: Trainer, batch: TFTBatch) -> int:
    """Measured peak bytes of one real ``trainer.train_step``: on CPU the live tensor storages
    (weights, buffers, AdamW state, batch, activations, gradients, temporaries), on CUDA the
    allocator's peak. Takes one unmeasured step first so that the optimizer state exists, as
    in training."""
    trainer.train_step(batch)
    gc.collect()
    if trainer.device.type == "cuda":
        torch.cuda.synchronize(trainer.device)
        torch.cuda.reset_peak_memory_stats(trainer.device)
        trainer.train_step(batch)
        torch.cuda.synchronize(trainer.device)
        return int(torch.cuda.max_memory_allocated(trainer.device))
    tracker = LiveStorageTracker()
    moments = trainer.update.optimizer.state.values()
    state = [t for s in moments for t in s.values() if torch.is_tensor(t)]
    tracker.track(*trainer.model.parameters(), *trainer.model.buffers(), *state)
    tracker.track(*batch_tensors(batch))
    with tracker:
        trainer.train_step(batch)
    return tracker.peak


def format_checks(checks: Sequence[PeakCheck], batch_size: int) -> str:
    """A Markdown table, as in docs/memory-budget.md."""
    lines = ["| plan | predicted | measured | error |", "| --- | ---: | ---: | ---: |"]
    lines += [
        f"| {c.case.describe(batch_size)} | {c.predicted / MB:.1f} MB | "
        f"{c.measured / MB:.1f} MB | {c.error:+.1%} |"
        for c in checks
    ]
    return "\n".join(lines)


class _NoWindows(Dataset[TFTBatch]):
    """The trainer wants datasets; these checks hand it batches directly."""

    def __len__(self) -> int:
        return 0

    def __getitem__(self, index: int) -> TFTBatch:
        raise IndexError(index)
