"""foxhunt's C++ CPU kernels, compiled on first use by ``torch.utils.cpp_extension``.

Two kernels: the fused tail of the per-variable GRNs (``model/grn_tail.cpp``) and the int8
Linear of int8 exports (``quant/int8_linear.cpp``). Each is built the first time it is
needed (about a minute; cached under ``TORCH_EXTENSIONS_DIR``, by default
``~/.cache/torch_extensions``, keyed by source, flags, CPU features and torch version).
Without a C++ compiler and ninja, or with ``FOXHUNT_FUSED_KERNEL=0``, callers fall back to
ATen / torch.ao ops: the same math, slower.
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

PACKAGE = Path(__file__).parent  # holds the headers the kernels share (fast_exp.h)
_UNSET = object()
_built: dict[tuple[Path, tuple[str, ...]], object] = {}


def enabled() -> bool:
    """Whether the kernels may be used (``FOXHUNT_FUSED_KERNEL=0`` turns them off)."""
    return os.environ.get("FOXHUNT_FUSED_KERNEL", "1") != "0"


def load(source: Path, name: str, extra_flags: tuple[str, ...] = ()) -> ModuleType | None:
    """The compiled module of ``source``, or None (disabled, or the build failed: warned once).
    ``extra_flags`` go after foxhunt's own (tests build e.g. an AVX2-only variant with them)."""
    if not enabled():
        return None
    module = _built.get((source, extra_flags), _UNSET)
    if module is _UNSET:
        module = _built[(source, extra_flags)] = _build(source, name, extra_flags)
    return module if isinstance(module, ModuleType) else None


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


def _ninja_on_path() -> None:
    """torch builds with the ``ninja`` on PATH; the pip package's counts too."""
    if shutil.which("ninja") is not None:
        return
    try:
        import ninja
    except ImportError:
        return
    os.environ["PATH"] = os.pathsep.join([ninja.BIN_DIR, os.environ.get("PATH", "")])


def _build(source: Path, name: str, extra_flags: tuple[str, ...]) -> ModuleType | None:
    from torch.utils import cpp_extension

    _ninja_on_path()
    # fast-math for vectorized reductions and reciprocals, but NaN and inf keep their meaning
    flags = ["-O3", "-ffast-math", "-fno-finite-math-only", "-fopenmp", *_arch_flags()]
    flags += extra_flags
    headers = b"".join(h.read_bytes() for h in sorted(PACKAGE.glob("*.h")))
    identity = source.read_bytes() + headers + " ".join(flags).encode() + _cpu_features()
    key = hashlib.sha256(identity + torch.__version__.encode()).hexdigest()[:12]
    log.info("loading foxhunt's %s CPU kernel (its first build on a machine takes ~1 min)", name)
    try:
        module = cpp_extension.load(
            name=f"foxhunt_{name}_{key}",
            sources=[str(source)],
            extra_cflags=flags,
            extra_include_paths=[str(PACKAGE)],
            extra_ldflags=["-fopenmp"],
            verbose=False,
        )
    except Exception as err:  # no compiler, no ninja, ...: fall back to ATen
        detail = str(err).strip().splitlines()[-1] if str(err).strip() else ""
        warnings.warn(
            f"foxhunt: could not build the {name} CPU kernel ({type(err).__name__}: {detail}); "
            "using the slower ATen/torch.ao path. Install a C++ compiler and ninja, or set "
            "FOXHUNT_FUSED_KERNEL=0 to silence this.",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    assert isinstance(module, ModuleType)
    return module
