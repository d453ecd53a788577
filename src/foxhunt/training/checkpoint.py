"""Trainer checkpoints: `Trainer.state_dict()` as safetensors and JSON, never pickle.

Files of one checkpoint, by part of the state dict (the layout of the first checkpoints, kept
so that they still resume; `sampler` and `callbacks` came later and may be absent):
    model.safetensors      model: weights
    best.safetensors       best_weights: weights of the best validation so far (if any)
    optimizer.safetensors  optimizer: its tensors (moments, step counts)
    rng.safetensors        rng: torch CPU (and CUDA) generator states
    callbacks.safetensors  the tensors of callbacks' states (only if one holds any)
    state.json             train_state (as "trainer"), the optimizer's groups and scalars,
                           scaler, sampler, callbacks, the lr scheduler (only with a
                           schedule: lr_schedule other than constant); the checkpointer's config, best
                           checkpoint and metadata

Nothing here knows what a trainer holds beyond its state dict's parts; the trainer's hooks
only tell the checkpointer when to save.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from safetensors import SafetensorError
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import Tensor

from foxhunt.config_fields import with_legacy_values
from foxhunt.errors import FoxhuntError
from foxhunt.storage.base import CheckpointError, CheckpointStorage

if TYPE_CHECKING:
    from foxhunt.training.trainer import Trainer

log = logging.getLogger("foxhunt.checkpoint")

# Fields that may change when resuming; any other difference means a different run.
RESUMABLE_CHANGES = frozenset(
    {"training.epochs", "training.patience", "training.device", "training.num_workers"}
    | {"training.eval_batch_size", "training.threads"}
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


TENSOR = "__tensor__"  # in state.json, a callback's tensor: {"__tensor__": its key}
CALLBACK_TENSORS = "callbacks.safetensors"


def _pull_tensors(tree: Any, path: str, out: dict[str, Tensor]) -> Any:
    """`tree` with each tensor (at any depth of dicts) moved to `out` under its path."""
    if isinstance(tree, Tensor):
        out[path] = tree
        return {TENSOR: path}
    if isinstance(tree, Mapping):
        return {k: _pull_tensors(v, f"{path}/{k}" if path else k, out) for k, v in tree.items()}
    return tree


def _put_tensors(tree: Any, tensors: Mapping[str, Tensor]) -> Any:
    if isinstance(tree, dict):
        if set(tree) == {TENSOR}:
            return tensors[tree[TENSOR]]
        return {k: _put_tensors(v, tensors) for k, v in tree.items()}
    return tree


def encode(state: Mapping[str, Any], header: Mapping[str, Any]) -> dict[str, bytes]:
    """The files of a checkpoint of `state` (a `Trainer.state_dict()`); `header`'s keys go
    into state.json as they are."""
    optimizer_tensors, optimizer_meta = _split_optimizer(state["optimizer"])
    callback_tensors: dict[str, Tensor] = {}
    callbacks = _pull_tensors(state.get("callbacks") or {}, "", callback_tensors)
    document = {
        "trainer": state["train_state"],
        "optimizer": optimizer_meta,
        "scaler": state["scaler"],
        "sampler": state.get("sampler"),
        "callbacks": callbacks,
        **header,
    }
    if state.get("scheduler") is not None:  # lr_schedule other than constant
        document["scheduler"] = state["scheduler"]
    files = {
        "model.safetensors": save_tensors(_cpu(state["model"])),
        "optimizer.safetensors": save_tensors(optimizer_tensors),
        "rng.safetensors": save_tensors(_cpu(state["rng"])),
        "state.json": json.dumps(document, indent=2, default=float).encode(),
    }
    if state.get("best_weights") is not None:
        files["best.safetensors"] = save_tensors(_cpu(state["best_weights"]))
    if callback_tensors:
        files[CALLBACK_TENSORS] = save_tensors(_cpu(callback_tensors))
    return files


def read_files(files: Mapping[str, bytes]) -> tuple[dict[str, Any], dict[str, dict[str, Tensor]]]:
    """state.json and every tensor file, parsed; KeyError, ValueError or SafetensorError when
    one is missing or damaged."""
    document = json.loads(files["state.json"])
    if not isinstance(document, dict) or not isinstance(document.get("config"), dict):
        raise ValueError("state.json holds no config")
    required = ("model.safetensors", "optimizer.safetensors", "rng.safetensors")
    optional = tuple(n for n in ("best.safetensors", CALLBACK_TENSORS) if n in files)
    return document, {name: load_tensors(files[name]) for name in required + optional}


def decode(document: Mapping[str, Any], tensors: Mapping[str, dict[str, Tensor]]) -> dict[str, Any]:
    """The `Trainer.state_dict()` that `read_files` found (KeyError if a part is missing)."""
    scheduler = {"scheduler": document["scheduler"]} if "scheduler" in document else {}
    return {
        **scheduler,
        "model": tensors["model.safetensors"],
        "best_weights": tensors.get("best.safetensors"),
        "optimizer": _join_optimizer(tensors["optimizer.safetensors"], document["optimizer"]),
        "scaler": document["scaler"],
        "train_state": document["trainer"],
        "sampler": document.get("sampler"),
        "callbacks": _put_tensors(
            document.get("callbacks") or {}, tensors.get(CALLBACK_TENSORS, {})
        ),
        "rng": tensors["rng.safetensors"],
    }


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
    # a field the checkpoint predates reads as its value then (config_fields.LEGACY_VALUES)
    saved = {k: with_legacy_values(k, v) if isinstance(v, Mapping) else v for k, v in saved.items()}
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
        header = {
            "config": self.config,
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
        name = name or resume_point(self)
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
