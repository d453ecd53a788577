"""The fused C++ tail of the per-variable GRNs (grn_tail.cpp), built once per machine.

On CPU the GLU, residual, LayerNorm and selection-weighted sum of a VSN's per-variable GRNs
are a dozen elementwise passes over [variables, rows, d_model] tensors; one C++ pass per
(variable, row) cell replaces them (the past VSN's forward + backward at the reference config:
540 -> 332 ms; a training step 1.37x faster, docs/performance.md). It is compiled by
``torch.utils.cpp_extension`` the first time it is needed (about a minute; cached under
``TORCH_EXTENSIONS_DIR``, by default ``~/.cache/torch_extensions``). Without a C++ compiler, or with ``FOXHUNT_FUSED_KERNEL=0``,
the ATen path (``fused_grns.AtenTail``) runs instead: the same math, slower.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import warnings
from pathlib import Path
from types import ModuleType

import torch

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("grn_tail.cpp")
_UNSET = object()
_module: object = _UNSET


def enabled() -> bool:
    """Whether the kernel may be used (``FOXHUNT_FUSED_KERNEL=0`` turns it off)."""
    return os.environ.get("FOXHUNT_FUSED_KERNEL", "1") != "0"


def _arch_flags() -> list[str]:
    """Tuned for this CPU on x86-64 (the cache key includes its feature flags); defaults
    elsewhere."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    return ["-march=native", "-mprefer-vector-width=512"]


def _cpu_features() -> bytes:
    """What the build is specific to: the CPU's feature flags (Linux), else the platform."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor().encode()
    return next((line for line in lines if line.startswith("flags")), "").encode()


def load() -> ModuleType | None:
    """The compiled module, or None (disabled, or the build failed: warned once)."""
    global _module
    if not enabled():
        return None
    if _module is _UNSET:
        _module = _build()
    return _module if isinstance(_module, ModuleType) else None


def _ninja_on_path() -> None:
    """torch builds with the ``ninja`` on PATH; the pip package's counts too."""
    if shutil.which("ninja") is not None:
        return
    try:
        import ninja
    except ImportError:
        return
    os.environ["PATH"] = os.pathsep.join([ninja.BIN_DIR, os.environ.get("PATH", "")])


def _build() -> ModuleType | None:
    from torch.utils import cpp_extension

    _ninja_on_path()
    # fast-math for vectorized reductions and reciprocals, but NaN and inf keep their meaning
    flags = ["-O3", "-ffast-math", "-fno-finite-math-only", "-fopenmp", *_arch_flags()]
    identity = SOURCE.read_bytes() + " ".join(flags).encode() + _cpu_features()
    key = hashlib.sha256(identity + torch.__version__.encode()).hexdigest()[:12]
    log.info("loading foxhunt's fused CPU kernel (its first build on a machine takes ~1 min)")
    try:
        module = cpp_extension.load(
            name=f"foxhunt_grn_tail_{key}",
            sources=[str(SOURCE)],
            extra_cflags=flags,
            extra_ldflags=["-fopenmp"],
            verbose=False,
        )
    except Exception as err:  # no compiler, no ninja, ...: fall back to ATen
        warnings.warn(
            f"foxhunt: could not build the fused CPU kernel ({type(err).__name__}: "
            f"{str(err).strip().splitlines()[-1] if str(err).strip() else ''}); using the "
            "slower ATen path. Install a C++ compiler and ninja, or set FOXHUNT_FUSED_KERNEL=0 "
            "to silence this.",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    assert isinstance(module, ModuleType)
    return module


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the kernel handles these tensors: float32 on CPU."""
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)
