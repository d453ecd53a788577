"""The C++ kernel of a VSN's per-variable GRNs (grn_cells.cpp), built once per machine.

On CPU in float32 the ``foxhunt::grn_cells`` op (fused_grns.py) runs in this kernel: a VSN's
n GRNs and their selection-weighted sum, (variable, row) cell by cell: matmuls, ELU,
dropout, GLU, skip, LayerNorm and sum in registers and L1, forward and a recomputing
backward, with nothing of width [variables, rows, *] in memory (the training step's
speed-up over the bmm path it replaced: docs/performance.md). It is an implementation, not
a definition: the math is ``fused_grns.weighted_grns``, and tests/model/test_grn_op.py holds
the kernel to it. Built on first use by :mod:`foxhunt.cpp_kernels` (about half a minute, then
cached). Without a C++ compiler, or with ``FOXHUNT_FUSED_KERNEL=0``, the op runs that Python
function block by block instead: the same math, slower.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import Tensor

from foxhunt import cpp_kernels

SOURCE = Path(__file__).with_name("grn_cells.cpp")


def load() -> ModuleType | None:
    """The compiled module, or None (disabled, or the build failed: warned once)."""
    return cpp_kernels.load(SOURCE, "grn_cells")


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the kernel handles these tensors: float32 on CPU."""
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)


def kernel_for(mask: Tensor | None, *tensors: Tensor) -> ModuleType | None:
    """The kernel for these tensors (float32 on CPU, where it builds) with a hashed dropout
    mask or none (``mask``: a drawn one, which the kernel does not take), else None."""
    if mask is not None or not usable(*tensors):
        return None
    return load()


def forward(
    kernel: Any,
    z: Tensor,
    weights: Tensor,
    params: tuple[Tensor, ...],
    drop: tuple[int, int],
    eps: float,
) -> Tensor:
    """The op's forward: ``drop`` is the dropout's (seed, keep threshold)."""
    # the LayerNorm biases are summed in the kernel too: no sum of it split by thread
    out = weights.new_zeros(weights.shape[0], params[4].shape[-1])  # [R, d]
    z_c, weights_t, *weights_c = (t.contiguous() for t in (z, weights.t(), *params))
    kernel.forward(z_c, weights_t, *drop, *weights_c, out, eps)
    return out


def backward(
    kernel: Any,
    grad: Tensor,
    z: Tensor,
    weights: Tensor,
    params: tuple[Tensor, ...],
    drop: tuple[int, int],
    need_z: bool,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """The op's backward (recomputing): gradients of z (empty unless ``need_z``), weights and
    the five parameters, each sum taken in one thread in row order (bit-identical at any
    thread count)."""
    z, in_w, fc2, glu, norm_w, norm_b = (t.contiguous() for t in (z, *params))
    grad = grad.contiguous()
    weights_t = weights.t().contiguous()  # [n, R]
    d_weights_t = torch.empty_like(weights_t)
    d_z = torch.empty_like(z) if need_z else z.new_empty(0)
    d_in_w, d_fc2, d_glu = torch.zeros_like(in_w), torch.zeros_like(fc2), torch.zeros_like(glu)
    d_norm_w, d_norm_b = torch.zeros_like(norm_w), torch.zeros_like(norm_b)
    kernel.backward(
        z, weights_t, *drop, in_w, fc2, glu, norm_w, norm_b, grad,
        d_weights_t, d_z, d_in_w, d_fc2, d_glu, d_norm_w, d_norm_b, eps,
    )  # fmt: skip
    return d_z, d_weights_t.t().contiguous(), d_in_w, d_fc2, d_glu, d_norm_w, d_norm_b
