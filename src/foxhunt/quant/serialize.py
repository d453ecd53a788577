"""An int8 model as plain tensors (safetensors-ready) and back: no pickle.

A converted model's ``state_dict`` is plain tensors already (``QuantizedLinear`` keeps int8
weights and float32 scales as buffers, ``Int8Weight`` its int8 values and scales as
parametrization originals). :func:`int8_tensors` takes them as they are;
:func:`load_int8_tensors` loads them into a model of the same structure
(:func:`foxhunt.quant.transform.int8_structure`), checking each name, dtype and shape.

On disk (:func:`pack`) the tensors are concatenated by dtype, in key order, into one 1-D
tensor per dtype: a few hundred small tensors would otherwise cost ~40 KB of safetensors
header, 3% of a 1.2 MB model. The names, shapes and dtypes are not stored: the model
structure rebuilt from ``config.json`` gives them (:func:`unpack`), and a digest of that
layout, stored with the file, refuses a file written for another structure.
"""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor, nn


def int8_tensors(model: nn.Module) -> dict[str, Tensor]:
    """Every value of an int8 model's state as plain tensors (int8, float32, int32, int64)."""
    return {key: value.detach().contiguous() for key, value in model.state_dict().items()}


def load_int8_tensors(model: nn.Module, tensors: dict[str, Tensor]) -> None:
    """Load :func:`int8_tensors`' output into a model of the same int8 structure.

    Raises KeyError/ValueError naming the first tensor that is missing, unexpected or of the
    wrong dtype or shape.
    """
    template = model.state_dict()
    for key, like in template.items():
        if key not in tensors:
            raise KeyError(f"missing tensor {key!r}")
        stored = tensors[key]
        if stored.dtype != like.dtype or stored.shape != like.shape:
            raise ValueError(
                f"{key}: expected {like.dtype} {list(like.shape)}, got {stored.dtype} "
                f"{list(stored.shape)}"
            )
    unused = sorted(set(tensors) - set(template))
    if unused:
        raise KeyError(f"unexpected tensors {unused[:3]} (of {len(unused)})")
    model.load_state_dict(tensors, strict=True)


def layout_digest(tensors: dict[str, Tensor]) -> str:
    """SHA-256 of the sorted (name, dtype, shape) list: what :func:`unpack` relies on."""
    lines = [f"{k}|{tensors[k].dtype}|{list(tensors[k].shape)}" for k in sorted(tensors)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def pack(tensors: dict[str, Tensor]) -> dict[str, Tensor]:
    """One 1-D tensor per dtype (named like ``int8``), the tensors concatenated in key order."""
    groups: dict[torch.dtype, list[Tensor]] = {}
    for key in sorted(tensors):
        groups.setdefault(tensors[key].dtype, []).append(tensors[key].reshape(-1))
    return {str(dtype).removeprefix("torch."): torch.cat(parts) for dtype, parts in groups.items()}


def unpack(blobs: dict[str, Tensor], like: dict[str, Tensor]) -> dict[str, Tensor]:
    """Inverse of :func:`pack`, given tensors of the same names, dtypes and shapes."""
    offsets = dict.fromkeys(blobs, 0)
    out: dict[str, Tensor] = {}
    for key in sorted(like):
        name, n = str(like[key].dtype).removeprefix("torch."), like[key].numel()
        if name not in blobs or offsets[name] + n > blobs[name].numel():
            raise ValueError(f"packed tensors end before {key!r} ({name})")
        out[key] = blobs[name][offsets[name] : offsets[name] + n].view(like[key].shape)
        offsets[name] += n
    left = {k: blobs[k].numel() - offsets[k] for k in blobs if offsets[k] != blobs[k].numel()}
    if left:
        raise ValueError(f"packed tensors longer than the model needs: {left}")
    return out
