"""Stage 3 of a train job: the baseline output calibrated, the trainer with its callbacks and
checkpointer, a resume, the memory plan, and the fit (re-planned once on running out of
memory under ``--memory-budget auto``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from foxhunt.jobs.build import BuiltRun
from foxhunt.jobs.options import JobSetting
from foxhunt.jobs.resume import checkpoint_location
from foxhunt.memory import MemoryProfiler
from foxhunt.memory.oom import REPLAN_FRACTION, budget_bytes, fit_with_oom_guard
from foxhunt.runs import append_history, versions
from foxhunt.storage.remote import open_storage
from foxhunt.training.calibrate import calibrate_baseline
from foxhunt.training.checkpoint import Checkpointer, resume_point
from foxhunt.training.diagnostics import TrainingDiagnostics
from foxhunt.training.distributed import barrier, main_decides, peer_failures
from foxhunt.training.memory import plan_trainer, watch_checkpointing
from foxhunt.training.train_state import TrainState
from foxhunt.training.trainer import Trainer


@dataclass(frozen=True, kw_only=True)
class Fitted:
    """The trainer after `fit` (its model holds the best weights) and its final state."""

    trainer: Trainer
    state: TrainState
    #: the base whose calibrated head replaced the kept model after training
    #: (jobs/fallback.py); None: the kept model is served
    served_head: str | None = None


@dataclass(frozen=True, kw_only=True)
class MemoryBudget:
    """``--memory-budget`` as the fit stage's input: bytes or "auto" (memory/oom.py), planned
    on the trainer's next batch before fitting and once more, smaller, after running out of
    memory; every plan is recorded in history.jsonl (`history`: the main rank's run folder)."""

    budget: float | str
    history: Path | None = None

    @classmethod
    def of(cls, job: JobSetting) -> MemoryBudget | None:
        budget = job.options.memory_budget
        if budget is None:
            return None
        return cls(budget=budget, history=job.output_dir if job.is_main else None)

    def plan(self, trainer: Trainer, fraction: float = 1.0) -> None:
        plan = plan_trainer(trainer, budget_bytes(self.budget, trainer.device, fraction))
        if self.history is not None:
            append_history(self.history, {"event": "memory_plan", **plan.__dict__})

    def replan(self, trainer: Trainer) -> None:
        self.plan(trainer, REPLAN_FRACTION)


class HistoryWriter:
    """Appends each epoch record to history.jsonl as it happens."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def on_epoch_end(self, trainer: Trainer, record: dict[str, Any]) -> None:
        append_history(self.run_dir, {"event": "epoch", **record})


def make_trainer(built: BuiltRun, job: JobSetting) -> tuple[Trainer, Checkpointer]:
    """The trainer and, on the main rank, its callbacks: the memory profiler, the
    diagnostics (with --diagnostics: they add to the record the history then writes), the
    history, the caller's, then the checkpointer (which thus saves their state)."""
    config, options, ctx, output_dir = built.config, job.options, job.distributed, job.output_dir
    checkpointer = Checkpointer(
        open_storage(checkpoint_location(output_dir, options)),
        config=config.to_dict(),
        every_steps=options.checkpoint_every,
        keep_last=options.keep_checkpoints,
        metadata={"versions": versions(), "identity": options.identity},
    )
    data = built.data
    trainer = Trainer(
        built.model,
        config.training,
        train_set=data.train,
        val_set=data.validation,
        quantiles=config.model.quantiles,
        rank=ctx.rank,
        world_size=ctx.world_size,
        local_rank=ctx.local_rank,
    )
    if ctx.is_main:  # the only rank that logs memory, writes history and checkpoints
        profiler = MemoryProfiler(
            trainer.device,
            log_every=options.memory_log_every,
            leak_threshold_mb=options.leak_threshold_mb,
            sink=partial(append_history, output_dir),
        )
        diagnostics = [TrainingDiagnostics()] if options.diagnostics else []
        history = HistoryWriter(output_dir)
        trainer.callbacks = [profiler, *diagnostics, history, *options.callbacks, checkpointer]
    return trainer, checkpointer


def fit(built: BuiltRun, job: JobSetting, memory: MemoryBudget | None = None) -> Fitted:
    options, ctx, output_dir = job.options, job.distributed, job.output_dir
    if built.config.training.calibrate and not options.resume:  # a resumed run restores its own
        record = calibrate_baseline(
            built.model,
            built.data.train,
            built.config.model.quantiles,
            loss_weighting=built.config.training.loss_weighting,
            validation=built.data.validation,  # a fit that does worse there is dropped
        )
        if record is not None and ctx.is_main:
            append_history(output_dir, record)
    trainer, checkpointer = make_trainer(built, job)
    with peer_failures(ctx):
        if options.resume:
            # every rank reads the checkpoint rank 0 names; the barrier keeps rank 0 from
            # writing (and pruning) checkpoints before every rank has finished reading
            name = main_decides(
                ctx, partial(resume_point, checkpointer.storage, options.resume_from)
            )
            checkpointer.restore(trainer, name)
            barrier()
        if memory is not None:
            memory.plan(trainer)
        if ctx.is_main:  # measured on the first training forward, if checkpointed then
            watch_checkpointing(trainer, partial(append_history, output_dir))
        state = fit_with_oom_guard(
            trainer.fit,
            batch_size=built.config.training.batch_size,
            budget=None if memory is None else memory.budget,
            replan=None if memory is None else partial(memory.replan, trainer),
        )
    return Fitted(trainer=trainer, state=state)
