"""torch.ao's static int8 Linear runs only where it computes what QAT simulated.

Its int8 GEMM multiplies 8-bit activations (quint8, 0..255) by int8 weights. With AVX-512 VNNI
(or AVX-VNNI) the u8 x s8 products are summed in int32: exact. Without VNNI (AVX2-only CPUs,
such as AMD EPYC Zen 2/3) oneDNN sums pairs of products in saturating int16 (vpmaddubsw):
255 * 127 * 2 overflows it, and the int8 model silently forecasts other values than the
fake-quant model it was trained as (0.8% of the prediction spread on average, measured with
the CPU limited to AVX2). A probe with exactly such products decides once per engine and
process; a model whose torch.ao layers would compute here refuses to run, with a line that
says what to use instead. Dynamic int8 layers take 7-bit activations and are exact anywhere;
foxhunt's int8 kernel (``quant/kernel.py``) is exact on AVX2 too.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.dynamic as nnqd
from torch import nn

from foxhunt.errors import FoxhuntError
from foxhunt.quant.toolkit import engine, make_qweight, quiet

_K = 64  # inputs of the probe's dot product: 32 pairs of 255 * 127, each over int16's range


@functools.cache
def saturation(engine_name: str) -> str | None:
    """What torch.ao's static int8 Linear packed for ``engine_name`` computes for a dot
    product whose exact value is 64 when it is not exact on this CPU (None: exact)."""
    with quiet(), engine(engine_name), torch.no_grad():
        x = torch.quantize_per_tensor(torch.ones(1, _K), 1 / 255, 0, torch.quint8)  # 255s
        linear = nnq.Linear(_K, 1)
        ones = make_qweight(torch.full((1, _K), 127, dtype=torch.int8), torch.full((1,), 1 / 127))
        linear.set_weight_bias(ones, None)
        linear.scale, linear.zero_point = 0.5, 0
        got = float(linear(x).dequantize())
    if abs(got - _K) <= 0.5:
        return None
    return f"a probe whose exact value is {_K} gave {got:g} (saturating 16-bit sums)"


def static_layers(model: nn.Module) -> list[str]:
    """Names of the torch.ao static int8 Linear layers left in ``model`` (a dynamic one is an
    ``nnq.Linear`` too, but quantizes its input to 7 bits: exact)."""
    return [
        name
        for name, m in model.named_modules()
        if isinstance(m, nnq.Linear) and not isinstance(m, nnqd.Linear)
    ]


def check_exact(model: nn.Module, engine_name: str) -> None:
    """Raise FoxhuntError when ``model`` would run torch.ao static int8 layers that are not
    exact on this CPU."""
    problem = saturation(engine_name)
    if problem is None:
        return
    layers = static_layers(model)
    if layers:
        raise FoxhuntError(
            f"this CPU has no VNNI: torch.ao's {engine_name} int8 Linear saturates 8-bit "
            f"activations ({problem}), so its {len(layers)} int8 layers (e.g. {layers[0]}) would "
            "forecast other values than the QAT model. Let foxhunt's exact int8 kernel compute "
            "them (a C++ compiler and ninja, FOXHUNT_FUSED_KERNEL not 0: load_export does, or "
            "call foxhunt.quant.kernel.accelerate(model)), or serve the FP32 run"
        )


class ExactnessGuard:
    """Forward pre-hook of a converted model: ``check_exact`` before every forward (cached
    probe: free where torch.ao is exact). A class, not a closure, so the model pickles."""

    def __init__(self, engine_name: str) -> None:
        self.engine_name = engine_name

    def __call__(self, module: nn.Module, args: Any) -> None:
        check_exact(module, self.engine_name)


def guard(model: nn.Module, engine_name: str) -> nn.Module:
    """Make ``model`` refuse to run where its torch.ao layers are not exact; returns it."""
    model.register_forward_pre_hook(ExactnessGuard(engine_name))
    return model
