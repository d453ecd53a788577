"""Trainer checkpoints: every stateful piece, as safetensors and JSON, never pickle.

Files of one checkpoint:
    model.safetensors      weights
    best.safetensors       weights of the best validation epoch so far (if any)
    optimizer.safetensors  optimizer tensors (moments, step counts)
    rng.safetensors        torch CPU (and CUDA) generator states
    state.json             position (epoch, batch), optimizer groups, scaler, config, metadata
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import Tensor

from foxhunt.errors import FoxhuntError
from foxhunt.storage.base import CheckpointError, CheckpointStorage
from foxhunt.training.trainer import Trainer, TrainState

log = logging.getLogger("foxhunt.checkpoint")

# Fields that may change when resuming; any other difference means a different run.
RESUMABLE_CHANGES = frozenset(
    {"training.epochs", "training.patience", "training.device", "training.num_workers"}
    | {"training.eval_batch_size"}
)


def _cpu(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    return {k: v.detach().cpu().contiguous() for k, v in state.items()}


def _split_optimizer(state: dict[str, Any]) -> tuple[dict[str, Tensor], dict[str, Any]]:
    tensors: dict[str, Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, per_param in state["state"].items():
        for key, value in per_param.items():
            if isinstance(value, Tensor):
                tensors[f"{pid}/{key}"] = value
            else:
                scalars.setdefault(str(pid), {})[key] = value
    return _cpu(tensors), {"param_groups": state["param_groups"], "scalars": scalars}


def _join_optimizer(tensors: dict[str, Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        pid, name = key.split("/", 1)
        state.setdefault(int(pid), {})[name] = value
    for pid, values in meta["scalars"].items():
        state.setdefault(int(pid), {}).update(values)
    return {"state": state, "param_groups": meta["param_groups"]}


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def config_differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    a, b = flatten(saved), flatten(current)
    return [
        f"{k}: checkpoint has {a.get(k)!r}, this run has {b.get(k)!r}"
        for k in sorted(set(a) | set(b))
        if k not in RESUMABLE_CHANGES and a.get(k) != b.get(k)
    ]


def check_same_run(saved: dict[str, Any] | None, ours: dict[str, Any], where: str) -> None:
    """A checkpoint's identity against this run's (None: written before identities)."""
    if saved is None:
        return
    if saved.get("run_id") != ours.get("run_id"):
        raise FoxhuntError(
            f"{where} belongs to run {saved.get('run_id')}, not to this run "
            f"({ours.get('run_id')}); checkpoints are never resumed across runs: give each "
            "run its own --checkpoint-storage"
        )
    if saved.get("data") != ours.get("data"):
        raise FoxhuntError(f"{where} was trained on other data than this run's; not resumed")


def checkpoint_step(name: str) -> int | None:
    """The optimizer step in a checkpoint's name (step-000000120[-epoch-0002])."""
    parts = name.split("-")
    return int(parts[1]) if len(parts) >= 2 and parts[0] == "step" and parts[1].isdigit() else None


def resume_point(checkpointer: Checkpointer, step: int | None = None) -> str:
    """The checkpoint to resume: the last complete one, or the last one of `step`."""
    names = checkpointer.storage.list()
    where = checkpointer.storage.describe("").rstrip("/")
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
        optimizer_tensors, optimizer_meta = _split_optimizer(trainer.optimizer.state_dict())
        rng = {"torch": torch.get_rng_state()}
        if torch.cuda.is_available():
            rng.update({f"cuda/{i}": s for i, s in enumerate(torch.cuda.get_rng_state_all())})
        state = {
            "trainer": asdict(trainer.state),
            "optimizer": optimizer_meta,
            "scaler": trainer.scaler.state_dict(),
            "config": self.config,
            "best_checkpoint": self.best_name,
            "metadata": {**self.metadata, "step": trainer.state.global_step},
        }
        files = {
            "model.safetensors": save_tensors(_cpu(trainer.model.state_dict())),
            "optimizer.safetensors": save_tensors(optimizer_tensors),
            "rng.safetensors": save_tensors(rng),
            "state.json": json.dumps(state, indent=2, default=float).encode(),
        }
        if trainer.best_weights is not None:
            files["best.safetensors"] = save_tensors(_cpu(trainer.best_weights))
        return files

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
        name = name or resume_point(self)
        files = self.storage.load(name)
        where = self.storage.describe(name)
        try:
            state = json.loads(files["state.json"])
            if not isinstance(state, dict) or not isinstance(state.get("config"), dict):
                raise ValueError("state.json holds no config")
            model_state = load_tensors(files["model.safetensors"])
            optimizer_tensors = load_tensors(files["optimizer.safetensors"])
            rng = load_tensors(files["rng.safetensors"])
            best = load_tensors(files["best.safetensors"]) if "best.safetensors" in files else None
        except (KeyError, ValueError, SafetensorError) as exc:
            raise CheckpointError(f"{where} cannot be read ({exc}); resume from another") from exc
        saved_identity = (state.get("metadata") or {}).get("identity")
        if self.metadata.get("identity") is not None:
            check_same_run(saved_identity, self.metadata["identity"], where)
        differences = config_differences(state["config"], self.config)
        if differences:
            raise CheckpointError(
                f"{where} was written by a different configuration: " + "; ".join(differences)
            )
        device = trainer.device
        try:
            trainer.model.load_state_dict({k: v.to(device) for k, v in model_state.items()})
            optimizer = _join_optimizer(optimizer_tensors, state["optimizer"])
            trainer.optimizer.load_state_dict(optimizer)
            trainer.scaler.load_state_dict(state["scaler"])
            trainer.state = TrainState(**state["trainer"])
        except (KeyError, ValueError, TypeError, RuntimeError, AttributeError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise CheckpointError(f"{where} does not fit this run ({first}); not resumed") from None
        trainer.best_weights = {k: v.to(device) for k, v in best.items()} if best else None
        torch.set_rng_state(rng["torch"])
        cuda_states = [rng[k] for k in sorted(rng) if k.startswith("cuda/")]
        if cuda_states and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(cuda_states)
        self.best_name = state.get("best_checkpoint")
        log.info(
            "resumed from %s: epoch %d, batch %d, step %d",
            where,
            trainer.state.epoch + 1,
            trainer.state.batch_in_epoch,
            trainer.state.global_step,
        )
        return name
