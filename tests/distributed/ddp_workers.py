"""What each rank runs in the distributed tests (importable by spawned processes)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from ddp_harness import TINY_TRAINING, FirstStepGrads, tiny_trainer

from foxhunt.batch import TFTBatch
from foxhunt.training.distributed import init_distributed, peer_failures, shutdown_distributed
from foxhunt.training.trainer import Trainer
from foxhunt.transforms import checkpointed_segments
from helpers import tiny_data, weights


def fit_worker(
    *,
    rank: int,
    out_dir: Path,
    dropout: float = 0.0,
    checkpointing: str = "none",
    nan_on_rank: int | None = None,
    epochs: int | None = None,
    stop_on_main: bool = False,
) -> None:
    """Train the tiny model under DDP; save what the parent compares to `rank{r}.pt`.
    `stop_on_main`: rank 0 alone (as in the job) has a callback that stops after epoch 1."""
    ctx = init_distributed("cpu", timeout_s=30)
    trainer = tiny_trainer(
        tiny_data(),
        dropout=dropout,
        rank=ctx.rank,
        world_size=ctx.world_size,
        checkpointing=checkpointing,
        **({"training": replace(TINY_TRAINING, epochs=epochs)} if epochs else {}),
    )
    if rank == nan_on_rank:
        poison_second_step(trainer)
    first = FirstStepGrads()
    trainer.callbacks = [first, StopAfterFirstEpoch()] if stop_on_main and rank == 0 else [first]
    trainer.fit()
    missing = [n for n, p in trainer.model.named_parameters() if p.grad is None]
    torch.save(
        {
            "weights": weights(trainer),
            "first_grads": first.grads,
            "history": trainer.state.history,
            "skipped": trainer.state.skipped_steps,
            "steps": trainer.state.global_step,
            "params_without_grad": missing,
            "ddp": type(trainer.train_model).__name__,
            "checkpointed": checkpointed_segments(trainer.model),
        },
        out_dir / f"rank{rank}.pt",
    )
    shutdown_distributed()


class StopAfterFirstEpoch:
    def on_epoch_end(self, trainer: Trainer, record: dict[str, Any]) -> None:
        trainer.request_stop("a main-rank callback")


def poison_second_step(trainer: Trainer) -> None:
    real = trainer.compute_loss
    calls = {"n": 0}

    def poisoned(batch: TFTBatch) -> torch.Tensor:
        calls["n"] += 1
        loss = real(batch)
        return loss * float("nan") if calls["n"] == 2 else loss

    trainer.compute_loss = poisoned


def cli_worker(
    *,
    rank: int,
    out_dir: Path,
    argv: Sequence[str] = (),
    runs: Sequence[Sequence[str]] = (),
    ports: Sequence[int] = (),
    fail_rank: int = 1,
    die_at_step: int | None = None,
    hang_at_step: int | None = None,
) -> int:
    """`foxhunt train` on this rank as torchrun would run it: `argv`, or each of `runs` in turn
    (a process group per run on its own port from `ports`: a rank that finishes early must not
    meet the previous run's store); `fail_rank` may die or hang."""
    if rank == fail_rank and (die_at_step or hang_at_step):
        sabotage(die_at_step, hang_at_step)
    from foxhunt.cli import main

    for i, args in enumerate(runs or [argv]):
        if ports:
            os.environ["MASTER_PORT"] = str(ports[i])
        code = main(list(args))
        if code:
            return code
    return 0


def sabotage(die_at_step: int | None, hang_at_step: int | None) -> None:
    real = Trainer.train_step
    calls = {"n": 0}

    def train_step(self: Trainer, batch: Any) -> float:
        calls["n"] += 1
        if calls["n"] == die_at_step:
            print(f"rank {self.rank}: dying at step {calls['n']}", flush=True)
            os._exit(3)
        if calls["n"] == hang_at_step:
            print(f"rank {self.rank}: hanging at step {calls['n']}", flush=True)
            time.sleep(3600)
        return real(self, batch)

    Trainer.train_step = train_step


def store_worker(
    *,
    rank: int,
    out_dir: Path,
    configs: Sequence[Any],
    fail_rank: int | None = None,
    die_rank: int | None = None,
) -> int:
    """`prepare_data` of each of `configs` in turn on every rank, sharing the symbols as the
    train job does (`jobs.prepare.store_ranks`); the rows each symbol computed here starts at
    go to `computed{rank}.txt`. `fail_rank` fails its first symbol of the first config;
    `die_rank` dies there (as kill -9 would: no cleanup)."""
    import logging

    from foxhunt.data import prepare_data
    from foxhunt.data import symbol_inputs as inputs_module
    from foxhunt.errors import DataError, FoxhuntError
    from foxhunt.jobs.prepare import store_ranks

    logging.basicConfig(level=logging.INFO, format=f"[rank {rank}] %(message)s")
    real = inputs_module.compute_symbol
    runs = {"n": 0}

    def compute(job: Any) -> Any:
        if rank == fail_rank and runs["n"] == 0:
            raise DataError(f"rank {rank}: a symbol that cannot be computed")
        if rank == die_rank and runs["n"] == 0:
            os._exit(9)
        with open(out_dir / f"computed{rank}.txt", "a") as f:
            f.write(f"{runs['n']} {job.first}\n")
        return real(job)

    inputs_module.compute_symbol = compute
    ctx = init_distributed("cpu", timeout_s=60)
    code = 0
    for config in configs:
        try:
            with peer_failures(ctx):  # as the train command: a dead peer is a DistributedError
                prepare_data(config, ranks=store_ranks(ctx))
        except FoxhuntError as exc:
            print(f"error: {exc}", flush=True)
            code = 2
        runs["n"] += 1
    shutdown_distributed()
    return code
