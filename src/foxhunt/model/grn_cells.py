"""The C++ kernel of a VSN's per-variable GRNs (grn_cells.cpp), built once per machine.

On CPU a VSN's n GRNs and their selection-weighted sum run in this kernel, (variable, row)
cell by cell: matmuls, ELU, dropout, GLU, skip, LayerNorm and sum in registers and L1,
forward and a recomputing backward, with nothing of width [variables, rows, *] in memory
(the training step's speed-up over the bmm path it replaced: docs/performance.md). Built
on first use by :mod:`foxhunt.cpp_kernels` (about a minute, then cached). Without a C++ compiler, or with
``FOXHUNT_FUSED_KERNEL=0``, fused_grns' blocked ATen path runs instead: the same math, slower.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import torch

from foxhunt import cpp_kernels

SOURCE = Path(__file__).with_name("grn_cells.cpp")


def load() -> ModuleType | None:
    """The compiled module, or None (disabled, or the build failed: warned once)."""
    return cpp_kernels.load(SOURCE, "grn_cells")


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the kernel handles these tensors: float32 on CPU."""
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)
