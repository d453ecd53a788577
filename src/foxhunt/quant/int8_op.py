"""foxhunt's int8 Linear as one custom op, ``foxhunt::int8_linear``: what ``Int8Linear`` and
``Int8GateAddNorm`` (quant/kernel.py) call.

Its math is written once, in :func:`decomposed`: :func:`int8_linear_reference`
(``QuantizedLinear``'s own forward, quant/linear.py) on the weights unpacked from the
kernel's layout, then the GLU and the residual LayerNorm the kernel fuses. It is

- the op's implementation on CPU in float32 where a compiled build of the kernel
  (int8_linear.cpp) is registered (``register_build``), and everywhere else;
- ``DECOMPOSITIONS``: what ``torch.export`` programs run after ``run_decompositions`` (and so
  an ONNX export of a converted model: ATen's fake quantization, a Linear, a LayerNorm).

The kernel computes the same values up to float32 rounding (its int32 sums are exact, its
rescale and GLU sigmoid round differently; tests/quant/test_kernel.py holds it to the
reference). The op registers its shapes (fake), a FLOP formula for ``FlopCounterMode``, and
no autograd: a converted int8 model is for inference (its weights are int8 buffers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.flop_counter import register_flop_formula

from foxhunt.quant.linear import int8_linear_reference

LANES, GROUP = 16, 4  # the kernel's weight blocks: 16 output channels x 4 inputs
GLU_TILE = 32  # GLU outputs per kernel tile: 32 values and their 32 gates
#: compiled builds of int8_linear.cpp by name (one per instruction set a process loads)
BUILDS: dict[str, ModuleType] = {}


def register_build(kernel: ModuleType) -> str:
    """The name the op's ``build`` argument calls ``kernel`` by."""
    BUILDS[kernel.__name__] = kernel
    return kernel.__name__


def unpack_weight(packed: Tensor, n: int, k: int) -> Tensor:
    """[ceil(N/16), ceil(K/4), 16, 4] (kernel.pack_weight's layout) -> the int8 [N, K]."""
    blocks, groups = packed.shape[0], packed.shape[1]
    rows = packed.permute(0, 2, 1, 3).reshape(blocks * LANES, groups * GROUP)
    return rows[:n, :k]


def glu_tiles(y: Tensor) -> Tensor:
    """``F.glu`` of a projection whose N outputs are in the kernel's glu order (32 values,
    their 32 gates, ...): [..., N] -> [..., N/2]."""
    tiles = y.unflatten(-1, (-1, 2, GLU_TILE))
    return (tiles[..., 0, :] * torch.sigmoid(tiles[..., 1, :])).flatten(-2)


def decomposed(
    x: Tensor,
    packed: Tensor,
    col_sum: Tensor,
    w_scale: Tensor,
    bias: Tensor | None,
    x_scale: float,
    x_zp: int,
    out_scale: float,
    out_zp: int,
    qmax: int,
    glu: bool,
    skip: Tensor | None,
    norm_weight: Tensor | None,
    norm_bias: Tensor | None,
    eps: float,
    build: str,
) -> Tensor:
    """The op in ATen: the reference int8 Linear (then its GLU, then LayerNorm(skip + y))."""
    int8 = unpack_weight(packed, col_sum.shape[0], x.shape[-1])
    output = (out_scale, out_zp) if out_scale > 0 else None
    y = int8_linear_reference(x, int8, w_scale, bias, (x_scale, x_zp), output, qmax)
    if glu:
        y = glu_tiles(y)
    if skip is not None:
        y = F.layer_norm(y + skip, (y.shape[-1],), norm_weight, norm_bias, eps)
    return y


@torch.library.custom_op("foxhunt::int8_linear", mutates_args=())
def int8_linear(
    x: Tensor,
    packed: Tensor,
    col_sum: Tensor,
    w_scale: Tensor,
    bias: Tensor | None,
    x_scale: float,
    x_zp: int,
    out_scale: float,
    out_zp: int,
    qmax: int,
    glu: bool,
    skip: Tensor | None,
    norm_weight: Tensor | None,
    norm_bias: Tensor | None,
    eps: float,
    build: str,
) -> Tensor:
    """x [..., K] float32 -> [..., N] (glu: [..., N/2]): the int8 Linear on the input grid
    (``x_scale``, ``x_zp``) and output grid (``out_scale`` 0: float output) on 0..``qmax``;
    ``build``: the registered kernel build that computes it on CPU ("": :func:`decomposed`)."""
    kernel = BUILDS.get(build)
    if kernel is None or x.device.type != "cpu" or x.dtype != torch.float32:
        return decomposed(
            x, packed, col_sum, w_scale, bias, x_scale, x_zp, out_scale, out_zp, qmax, glu,
            skip, norm_weight, norm_bias, eps, build,
        )  # fmt: skip
    out = kernel.linear(
        x.contiguous(), packed, col_sum, w_scale, bias, x_scale, x_zp, out_scale, out_zp, glu,
        skip, norm_weight, norm_bias, eps, qmax=qmax,
    )  # fmt: skip
    assert isinstance(out, Tensor)
    return out


@int8_linear.register_fake
def _fake(x: Tensor, packed: Tensor, col_sum: Tensor, *rest: Any) -> Tensor:
    glu = rest[7]
    n = col_sum.shape[0] // 2 if glu else col_sum.shape[0]
    return x.new_empty((*x.shape[:-1], n))


#: The op's decomposition, for ``ExportedProgram.run_decompositions`` and compilers.
DECOMPOSITIONS: dict[Any, Callable[..., Tensor]] = {
    torch.ops.foxhunt.int8_linear.default: decomposed
}


@register_flop_formula(torch.ops.foxhunt.int8_linear)
def _flops(x: Any, packed: Any, col_sum: Any, *_: Any, **__: Any) -> int:
    """The GEMM's multiply-adds (the epilogue's few per output are left out, as for a Linear)."""
    *rows, k = x
    return 2 * math.prod(rows) * k * col_sum[0]
