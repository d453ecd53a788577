"""The fused C++ tail of the per-variable GRNs (grn_tail.cpp), built once per machine.

On CPU the GLU, residual, LayerNorm and selection-weighted sum of a VSN's per-variable GRNs
are a dozen elementwise passes over [variables, rows, d_model] tensors; one C++ pass per
(variable, row) cell replaces them (the past VSN's forward + backward at the reference config:
540 -> 332 ms; a training step 1.37x faster, docs/performance.md). Built on first use by
:mod:`foxhunt.cpp_kernels` (about a minute, then cached). Without a C++ compiler, or with
``FOXHUNT_FUSED_KERNEL=0``, the ATen path (``fused_grns.AtenTail``) runs instead: the same
math, slower.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import torch

from foxhunt import cpp_kernels

SOURCE = Path(__file__).with_name("grn_tail.cpp")


def load() -> ModuleType | None:
    """The compiled module, or None (disabled, or the build failed: warned once)."""
    return cpp_kernels.load(SOURCE, "grn_tail")


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the kernel handles these tensors: float32 on CPU."""
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)
