"""The torch.ao.quantization calls foxhunt relies on, in one place.

torch.ao.quantization's eager mode (QConfig, FakeQuantize, prepare_qat/convert,
quantize_dynamic, the ``quantized`` kernels) still works in torch 2.13 but warns that it is
deprecated in favour of torchao; :func:`quiet` silences those warnings where we call it.
A migration touches this module and ``transform.py``; see docs/QAT_GUIDE.md.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any, cast

import torch
import torch.ao.quantization as tq
from torch import Tensor, nn
from torch.ao.nn.quantized.dynamic import LSTM as DynamicLSTM
from torch.ao.nn.quantized.dynamic.modules.rnn import PackedParameter


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence torch.ao's deprecation warnings (eager quantization, quantized tensor types)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=r".*quantiz.*deprecated", category=UserWarning)
        warnings.filterwarnings("ignore", message=r".*reduce_range will be deprecated")
        warnings.filterwarnings("ignore", message=r".*must run observer before")
        yield


@contextlib.contextmanager
def engine(name: str) -> Iterator[None]:
    """Pack int8 weights for ``name`` (a torch.backends.quantized engine) inside the block.

    Packed weights keep the kernels of the engine they were packed for, so the global engine
    only matters while packing; it is restored afterwards.
    """
    if name not in torch.backends.quantized.supported_engines:
        raise ValueError(
            f"quantized engine {name!r} is not available in this torch build (available: "
            f"{torch.backends.quantized.supported_engines})"
        )
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = name
    try:
        yield
    finally:
        torch.backends.quantized.engine = before


def qat_qconfig(backend: str) -> tq.QConfig:
    """torch's default QAT qconfig for ``backend``: per-channel symmetric qint8 weights,
    per-tensor affine quint8 activations (7-bit on x86/fbgemm, 8-bit on onednn),
    moving-average observers.

    ``version=0``: separate observer and FakeQuantize modules. The fused ones of version 1
    (``FusedMovingAvgObsFakeQuantize``) compute an affine grid for a per-channel symmetric
    weight whose channel is all of one sign (zero point -128 or 127), while ``convert``
    quantizes that channel on the symmetric grid: the int8 model would differ from the
    fake-quant model it was trained as (checked in torch 2.13).
    """
    with quiet():
        return tq.get_default_qat_qconfig(backend, version=0)


def dynamic_qconfig() -> tq.QConfig:
    """Post-training dynamic quantization: per-channel int8 weights, activations quantized
    per call from their own range."""
    return tq.per_channel_dynamic_qconfig


def make_qweight(int8: Tensor, scale: Tensor) -> Tensor:
    """A torch qint8 tensor from int8 values and float scales (per channel along dim 0 when
    ``scale`` has one entry per row, else per tensor); zero points are 0 (symmetric)."""
    with quiet():
        if scale.numel() == 1 and int8.shape[0] != 1:
            return torch._make_per_tensor_quantized_tensor(int8, float(scale), 0)
        scales = scale.reshape(-1).double()
        zeros = torch.zeros_like(scales, dtype=torch.int64)
        return torch._make_per_channel_quantized_tensor(int8, scales, zeros, 0)


def split_qweight(q: Tensor) -> tuple[Tensor, Tensor]:
    """(int8 values, float32 scales) of a symmetric qint8 tensor (per channel on dim 0 or per
    tensor); refuses nonzero zero points and other axes, which foxhunt never produces."""
    if q.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
        if q.q_zero_point() != 0:
            raise ValueError("expected a symmetric int8 weight (zero point 0)")
        return q.int_repr(), torch.tensor(q.q_scale(), dtype=torch.float32)
    if q.q_per_channel_axis() != 0 or bool(torch.any(q.q_per_channel_zero_points() != 0)):
        raise ValueError("expected a per-output-channel symmetric int8 weight")
    return q.int_repr(), q.q_per_channel_scales().float()


def lstm_cell_params(weights: dict[str, Tensor], biases: dict[str, Tensor], version: int) -> Any:
    """torch's packed dynamic-int8 LSTM cell of one layer and direction (as
    ``nnqd.LSTM.from_float`` builds it) from its qint8 ``weight_ih``/``weight_hh``."""
    with quiet():
        packed_ih = torch.ops.quantized.linear_prepack(weights["ih"], biases["ih"])
        packed_hh = torch.ops.quantized.linear_prepack(weights["hh"], biases["hh"])
        extra = () if version < 2 else (True,)
        return torch.ops.quantized.make_quantized_cell_params_dynamic(
            packed_ih, packed_hh, biases["ih"], biases["hh"], *extra
        )


def dynamic_lstm(lstm: nn.LSTM, weights: dict[str, Tensor], biases: dict[str, Tensor]) -> nn.Module:
    """A dynamic-int8 ``nnqd.LSTM`` shaped like ``lstm`` with the given qint8 weights
    (``weights["weight_ih_l0"]`` ...) and float biases, packed for the current engine."""
    if lstm.proj_size or not lstm.bias:
        raise ValueError("dynamic int8 LSTMs need bias=True and no projection")
    with quiet():
        q = DynamicLSTM(
            lstm.input_size, lstm.hidden_size, lstm.num_layers, lstm.bias, lstm.batch_first,
            lstm.dropout, lstm.bidirectional, dtype=torch.qint8,
        )  # fmt: skip
        values = []
        for suffix in lstm_suffixes(lstm):
            w = {k: weights[f"weight_{k}_l{suffix}"] for k in ("ih", "hh")}
            b = {k: biases[f"bias_{k}_l{suffix}"] for k in ("ih", "hh")}
            values.append(PackedParameter(lstm_cell_params(w, b, q.version or 1)))
        q._all_weight_values = nn.ModuleList(values)
    return q


def lstm_suffixes(lstm: nn.Module) -> list[str]:
    """Layer/direction suffixes ("0", "0_reverse", "1", ...) of an LSTM's weight names."""
    directions = ("", "_reverse") if lstm.bidirectional else ("",)
    layers = cast(int, lstm.num_layers)
    return [f"{layer}{d}" for layer in range(layers) for d in directions]


def dynamic_lstm_weights(q: nn.Module) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """(qint8 weights, float biases) by name (``weight_ih_l0`` ...) of an ``nnqd.LSTM``."""
    found = q._weight_bias()  # type: ignore[operator]
    return dict(found["weight"]), {k: v.detach() for k, v in found["bias"].items()}


def is_dynamic_lstm(module: nn.Module) -> bool:
    return isinstance(module, DynamicLSTM)
