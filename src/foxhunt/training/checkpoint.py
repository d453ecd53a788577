"""Trainer checkpoints: the `Checkpointer` callback that saves, prunes and restores them.

A checkpoint is `Trainer.state_dict()` as safetensors and JSON, never pickle (the file layout:
`checkpoint_format.py`); a restore refuses one of another run or configuration
(`checkpoint_checks.py`). Nothing here knows what a trainer holds beyond its state dict's
parts; the trainer's hooks only tell the checkpointer when to save.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from safetensors import SafetensorError

from foxhunt.migrations import FORMAT, FORMAT_KEY
from foxhunt.storage.base import CheckpointError, CheckpointStorage
from foxhunt.training.checkpoint_checks import (
    RESUMABLE_CHANGES,
    check_same_run,
    config_differences,
    flatten,
)
from foxhunt.training.checkpoint_format import decode, encode, read_files

if TYPE_CHECKING:
    from foxhunt.training.trainer import Trainer

#: the checks' names stay importable from here (jobs/resume.py, runs/identity.py), and the
#: format's, as before the split
__all__ = [
    "RESUMABLE_CHANGES",
    "Checkpointer",
    "check_same_run",
    "checkpoint_step",
    "config_differences",
    "decode",
    "encode",
    "flatten",
    "read_files",
    "resume_point",
]

log = logging.getLogger("foxhunt.checkpoint")


def checkpoint_step(name: str) -> int | None:
    """The optimizer step in a checkpoint's name (step-000000120[-epoch-0002])."""
    parts = name.split("-")
    return int(parts[1]) if len(parts) >= 2 and parts[0] == "step" and parts[1].isdigit() else None


def resume_point(storage: CheckpointStorage, step: int | None = None) -> str:
    """The checkpoint in `storage` to resume: the last complete one, or the last one of
    `step`."""
    names = storage.list()
    where = storage.describe("").rstrip("/")
    if not names:
        raise CheckpointError(
            f"no complete checkpoint in {where}: the run stopped before its first one; "
            "start it again with --overwrite (or use --checkpoint-every N to save sooner)"
        )
    if step is None:
        return names[-1]
    matching = [n for n in names if checkpoint_step(n) == step]
    if not matching:
        steps = sorted({s for s in map(checkpoint_step, names) if s is not None})
        raise CheckpointError(
            f"--resume-from {step}: no checkpoint of that step in {where}; "
            f"complete ones are at steps {steps}"
        )
    return matching[-1]


class Checkpointer:
    """A trainer callback: saves every `every_steps` steps and at each epoch end; keeps the
    last `keep_last` checkpoints and the best one."""

    def __init__(
        self,
        storage: CheckpointStorage,
        *,
        config: Mapping[str, Any],
        every_steps: int | None = None,
        keep_last: int = 2,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        if keep_last < 1:
            raise ValueError(f"keep_last must be >= 1, got {keep_last}")
        self.storage = storage
        self.config = dict(config)
        self.every_steps = every_steps
        self.keep_last = keep_last
        self.metadata = dict(metadata or {})
        self.best_name: str | None = None

    # --- callback hooks ----------------------------------------------------------------
    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        step = trainer.state.global_step
        if self.every_steps and step and step % self.every_steps == 0 and math.isfinite(loss):
            self.save(trainer, f"step-{step:09d}")

    def on_epoch_end(self, trainer: Trainer, record: dict[str, float]) -> None:
        name = f"step-{trainer.state.global_step:09d}-epoch-{trainer.state.epoch:04d}"
        if trainer.state.best_epoch == trainer.state.epoch - 1:
            self.best_name = name
        self.save(trainer, name)

    # --- save / restore ----------------------------------------------------------------
    def files(self, trainer: Trainer) -> dict[str, bytes]:
        header = {
            "config": {**self.config, FORMAT_KEY: FORMAT},  # foxhunt/migrations.py
            "best_checkpoint": self.best_name,
            "metadata": {**self.metadata, "step": trainer.state.global_step},
        }
        return encode(trainer.state_dict(), header)

    def save(self, trainer: Trainer, name: str) -> None:
        self.storage.save(name, self.files(trainer))
        log.debug("checkpoint %s written", self.storage.describe(name))
        self.prune()

    def prune(self) -> None:
        names = self.storage.list()
        keep = set(names[-self.keep_last :])
        if self.best_name:
            keep.add(self.best_name)
        for name in names:
            if name not in keep:
                self.storage.delete(name)

    def latest(self) -> str | None:
        names = self.storage.list()
        return names[-1] if names else None

    def restore(self, trainer: Trainer, name: str | None = None) -> str:
        """Load `name` (default: the latest complete checkpoint) into the trainer."""
        self.storage.clean_partial()  # a killed save's leftovers, before this run saves again
        name = name or resume_point(self.storage)
        files = self.storage.load(name)
        where = self.storage.describe(name)
        try:
            document, tensors = read_files(files)
        except (KeyError, ValueError, SafetensorError) as exc:
            raise CheckpointError(f"{where} cannot be read ({exc}); resume from another") from exc
        saved_identity = (document.get("metadata") or {}).get("identity")
        if self.metadata.get("identity") is not None:
            check_same_run(saved_identity, self.metadata["identity"], where)
        differences = config_differences(document["config"], self.config)
        if differences:
            raise CheckpointError(
                f"{where} was written by a different configuration: " + "; ".join(differences)
            )
        try:
            trainer.load_state_dict(decode(document, tensors))
            position = document["trainer"]
        except (KeyError, ValueError, TypeError, RuntimeError, AttributeError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise CheckpointError(f"{where} does not fit this run ({first}); not resumed") from None
        self.best_name = document.get("best_checkpoint")
        log.info(
            "resumed from %s: epoch %d, batch %d, step %d",
            where,
            position["epoch"] + 1,
            position["batch_in_epoch"],
            position["global_step"],
        )
        return name
