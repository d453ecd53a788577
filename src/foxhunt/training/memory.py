"""The memory tools pointed at a trainer: its next batch probed, the plan applied to it, its
first training forward watched (what checkpointing saves).

``foxhunt.memory`` knows models, batches and a loss callable, never the trainer; this module
is the one place that hands it the trainer's pieces and sets what the plan decides.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from foxhunt.batch import TFTBatch
from foxhunt.data import make_loader
from foxhunt.memory import startup
from foxhunt.memory.budget import MemoryPlan, plan_memory
from foxhunt.memory.plan import apply_plan, measure_costs
from foxhunt.task import BatchLoss, loss_of
from foxhunt.training.trainer import Trainer

log = logging.getLogger("foxhunt.memory")


def first_training_batch(trainer: Trainer) -> TFTBatch:
    """The batch the next training step will see (also after a resume)."""
    state = trainer.state
    trainer.sampler.set_position(state.epoch, state.batch_in_epoch)  # fit() sets it again
    batch: TFTBatch = next(iter(make_loader(trainer.train_set, batch_sampler=trainer.sampler)))
    return batch.to(trainer.device)


def probe_loss(trainer: Trainer) -> BatchLoss:
    """The training forward + loss on the plain module (never the DDP wrapper: a probe must
    not sync), with the training autocast; unweighted, as the probe has always measured."""
    return loss_of(
        trainer.model,
        trainer.quantiles,
        autocast=trainer.autocast,
        range_weight=trainer.config.range_weight,
    )


def watch_checkpointing(trainer: Trainer, sink: Callable[[dict[str, Any]], None]) -> None:
    """Measure what checkpointing saves on the trainer's first training forward, when it runs
    (``memory/startup.py``): on the plain module, never the DDP wrapper."""
    startup.watch_first_forward(trainer.model, sink)


def plan_trainer(trainer: Trainer, budget_bytes: float) -> MemoryPlan:
    """Probe the trainer's next batch, plan for ``budget_bytes``, apply it, log it."""
    batch = first_training_batch(trainer)
    table = measure_costs(trainer.model, batch, probe_loss(trainer))
    plan = plan_memory(table, budget_bytes=budget_bytes, batch_size=batch.batch_size)
    trainer.micro_batch_size = apply_plan(trainer.model, plan)
    log.info("%s", plan.describe())
    return plan
