"""An int8 model as plain tensors (safetensors-ready) and back: no pickle, no packed objects.

torch's quantized modules keep their weights as quantized tensors inside packed, engine-
specific objects (``LinearPackedParams``, LSTM cell params), which safetensors cannot hold.
:func:`int8_tensors` flattens the converted model's ``state_dict`` into plain tensors: every
quantized weight becomes its int8 values ``<key>`` and float32 scales ``<key>.scale`` (one
per output channel; zero points are 0), everything else is kept as it is. To load,
:func:`load_int8_tensors` takes a model of the same structure
(:func:`foxhunt.quant.transform.int8_structure`), rebuilds its ``state_dict`` from the
tensors, re-packing the weights for the local engine, and loads it strictly.

On disk (:func:`pack`) the tensors are concatenated by dtype, in key order, into one 1-D
tensor per dtype: a few hundred small tensors would otherwise cost ~40 KB of safetensors
header, 3% of a 1.2 MB model. The names, shapes and dtypes are not stored: the model
structure rebuilt from ``config.json`` gives them (:func:`unpack`), and a digest of that
layout, stored with the file, refuses a file written for another structure.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import torch
from torch import Tensor, nn

from foxhunt.quant.toolkit import (
    dynamic_lstm_weights,
    is_dynamic_lstm,
    lstm_cell_params,
    lstm_suffixes,
    make_qweight,
    quiet,
    split_qweight,
)

_LSTM_PARAM = "_all_weight_values."  # nnqd.LSTM state: <prefix>_all_weight_values.<i>.param


def _lstms(model: nn.Module) -> dict[str, nn.Module]:
    return {f"{name}.": m for name, m in model.named_modules() if is_dynamic_lstm(m)}


def _put(out: dict[str, Tensor], key: str, qweight: Tensor) -> None:
    int8, scale = split_qweight(qweight)
    out[key], out[f"{key}.scale"] = int8.contiguous(), scale.contiguous()


def int8_tensors(model: nn.Module) -> dict[str, Tensor]:
    """Every value of an int8 model's state as plain tensors (int8, float32, int64)."""
    out: dict[str, Tensor] = {}
    lstms = _lstms(model)
    with quiet():
        for key, value in model.state_dict().items():
            if isinstance(value, torch.dtype) or (
                any(key.startswith(p + _LSTM_PARAM) for p in lstms)
            ):
                continue  # the weight dtype (always qint8); LSTM cells: below
            if isinstance(value, tuple):  # packed Linear params: (qweight, bias or None)
                _put(out, f"{key}.weight", value[0])
                if value[1] is not None:
                    out[f"{key}.bias"] = value[1].detach().contiguous()
            elif isinstance(value, Tensor) and value.is_quantized:
                _put(out, key, value)
            elif isinstance(value, Tensor):
                out[key] = value.detach().contiguous()
            else:
                raise TypeError(f"{key}: cannot store a {type(value).__name__}")
        for prefix, lstm in lstms.items():
            weights, biases = dynamic_lstm_weights(lstm)
            for name, qweight in weights.items():
                _put(out, prefix + name, qweight)
            out.update({prefix + name: b.contiguous() for name, b in biases.items()})
    return out


class _Reader:
    """Hands out tensors by key, checking each is there, and which were never used."""

    def __init__(self, tensors: dict[str, Tensor]) -> None:
        self.tensors, self.used = tensors, set[str]()

    def take(self, key: str) -> Tensor:
        if key not in self.tensors:
            raise KeyError(f"missing tensor {key!r}")
        self.used.add(key)
        return self.tensors[key]

    def qweight(self, key: str) -> Tensor:
        int8 = self.take(key)
        if int8.dtype != torch.int8:
            raise ValueError(f"{key}: expected int8 values, got {int8.dtype}")
        return make_qweight(int8, self.take(f"{key}.scale").float())

    def unused(self) -> list[str]:
        return sorted(set(self.tensors) - self.used)


def load_int8_tensors(model: nn.Module, tensors: dict[str, Tensor]) -> None:
    """Load :func:`int8_tensors`' output into a model of the same int8 structure.

    Raises KeyError/ValueError naming the first tensor that is missing, unexpected or of the
    wrong dtype or shape.
    """
    reader = _Reader(tensors)
    lstms = _lstms(model)
    template = model.state_dict()
    state: dict[str, Any] = OrderedDict()
    state._metadata = getattr(template, "_metadata", {})  # type: ignore[attr-defined]  # versions
    with quiet():
        for key, value in template.items():
            owner = next((p for p in lstms if key.startswith(p + _LSTM_PARAM)), None)
            if owner is not None:
                index = int(key[len(owner + _LSTM_PARAM) :].split(".")[0])
                state[key] = _lstm_cell(reader, owner, lstms[owner], index)
            elif isinstance(value, torch.dtype):
                state[key] = value
            elif isinstance(value, tuple):
                bias = reader.take(f"{key}.bias") if value[1] is not None else None
                state[key] = (reader.qweight(f"{key}.weight"), bias)
            elif isinstance(value, Tensor) and value.is_quantized:
                state[key] = reader.qweight(key)
            else:
                state[key] = _plain(reader.take(key), value, key)
        unused = reader.unused()
        if unused:
            raise KeyError(f"unexpected tensors {unused[:3]} (of {len(unused)})")
        model.load_state_dict(state, strict=True)


def _plain(stored: Tensor, like: Tensor, key: str) -> Tensor:
    if stored.dtype != like.dtype or stored.shape != like.shape:
        raise ValueError(
            f"{key}: expected {like.dtype} {list(like.shape)}, got {stored.dtype} "
            f"{list(stored.shape)}"
        )
    return stored


def _lstm_cell(reader: _Reader, prefix: str, lstm: nn.Module, index: int) -> Any:
    suffix = lstm_suffixes(lstm)[index]
    weights = {k: reader.qweight(f"{prefix}weight_{k}_l{suffix}") for k in ("ih", "hh")}
    biases = {k: reader.take(f"{prefix}bias_{k}_l{suffix}") for k in ("ih", "hh")}
    return lstm_cell_params(weights, biases, int(getattr(lstm, "version", 1) or 1))


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
