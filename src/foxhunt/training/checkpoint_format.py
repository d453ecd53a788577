"""The file layout of a trainer checkpoint: `Trainer.state_dict()` as safetensors and JSON,
never pickle.

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

`encode` writes a state dict as these files, `read_files` parses them and `decode` joins them
back into the state dict; nothing here knows a trainer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors
from torch import Tensor


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
