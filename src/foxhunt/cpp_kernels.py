"""foxhunt's C++ CPU kernels, compiled on first use by ``torch.utils.cpp_extension``.

Two kernels: a VSN's per-variable GRNs, whole (``model/grn_cells.cpp``), and the int8
Linear of int8 exports (``quant/int8_linear.cpp``). Each is built the first time it is
needed (about a minute) into a folder under ``TORCH_EXTENSIONS_DIR`` (by default
``~/.cache/torch_extensions/py<ver>_<accelerator>``) named by a key of everything that goes
into the build command: sources and shared headers, flags, the CPU's features (for a native
build), the compiler, and torch's version, install path and Python's include folder.
The sources are compiled from copies in that folder, so two checkouts of the same version
share one build, and two venvs keep one each; neither rebuilds the other's.

Builds never hang: :mod:`foxhunt.build_lock` lets one process at a time build a folder, clears
what a killed build left (torch's ``lock`` file, running compilers), and gives up after
``FOXHUNT_KERNEL_BUILD_TIMEOUT`` seconds (default 600) of waiting for another process.

``FOXHUNT_CPU_ISA`` picks the instruction set for all kernels: ``native`` (default; this CPU,
512-bit vectors) or ``avx2`` (``-march=x86-64-v3``: AVX2 and FMA, no AVX-512 and no VNNI, what
e.g. AMD EPYC Zen 2/3 runs), to test that path on an AVX-512 machine. Unset, it follows
``ATEN_CPU_CAPABILITY=avx2|default`` to ``avx2``. ``FOXHUNT_INT8_SIMD`` is its old name.

A cached module that cannot be imported (truncated, overwritten) is removed and built again.
Without a C++ compiler and ninja, a failed build, or with ``FOXHUNT_FUSED_KERNEL=0`` (or
``false``, ``off``, ``no``), callers fall back to ATen ops: the same math, slower. The command
line refuses any other value, and a bad ISA or build timeout, before a run starts
(:func:`foxhunt.build_lock.check_kernel_environment`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import shutil
import sysconfig
import warnings
from pathlib import Path
from types import ModuleType

import torch

from foxhunt import build_lock
from foxhunt.errors import ConfigError

log = logging.getLogger(__name__)

PACKAGE = Path(__file__).parent  # holds the headers the kernels share (fast_exp.h)
ISA_ENV, OLD_ISA_ENV = "FOXHUNT_CPU_ISA", "FOXHUNT_INT8_SIMD"
ISA_FLAGS = {
    "native": ("-march=native", "-mprefer-vector-width=512"),
    "avx2": ("-march=x86-64-v3",),  # AVX2 + FMA: no __AVX512*__ nor __AVXVNNI__ defined
}
# fast-math for vectorized reductions and reciprocals, but NaN and inf keep their meaning
BASE_FLAGS = ("-O3", "-ffast-math", "-fno-finite-math-only", "-fopenmp")
_UNSET = object()
_built: dict[tuple[Path, str], object] = {}


def enabled() -> bool:
    """Whether the kernels may be used (``FOXHUNT_FUSED_KERNEL=0``, ``false``, ``off`` or
    ``no`` turns them off; another value than those or 1/true/on/yes is a ConfigError)."""
    return build_lock.kernels_enabled()


def cpu_isa() -> str:
    """The instruction set the kernels are built for: ``native`` or ``avx2`` (module doc)."""
    isa = build_lock.isa_from_environment()
    return isa or _follow_aten(os.environ.get("ATEN_CPU_CAPABILITY", "").strip())


def _checked(isa: str, source: str) -> str:
    if isa not in ISA_FLAGS:
        raise ConfigError(f"{source}={isa!r}: use one of {sorted(ISA_FLAGS)}, or unset it")
    return isa


@functools.cache
def _follow_aten(capability: str) -> str:
    if capability not in ("avx2", "default"):
        return "native"
    log.info(
        "ATEN_CPU_CAPABILITY=%s: building foxhunt's CPU kernels for AVX2 (%s=native to override)",
        capability,
        ISA_ENV,
    )
    return "avx2"


def load(source: Path, name: str, isa: str | None = None) -> ModuleType | None:
    """The compiled module of ``source``, or None (disabled, or the build failed: warned once).
    ``isa``: ``native`` or ``avx2``; by default :func:`cpu_isa` (tests build both)."""
    if not enabled():
        return None
    isa = cpu_isa() if isa is None else _checked(isa, "isa")
    module = _built.get((source, isa), _UNSET)
    if module is _UNSET:
        module = _built[(source, isa)] = _build(source, name, isa)
    return module if isinstance(module, ModuleType) else None


def missing_toolchain() -> str | None:
    """Why no kernel can be built here (no C++ compiler, no ninja), or None."""
    _ninja_on_path()
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        return f"no C++ compiler ({compiler} is not on PATH)"
    if shutil.which("ninja") is None:
        return "no ninja (pip install ninja)"
    return None


def build_folder(source: Path, name: str, isa: str | None = None) -> Path:
    """Where ``source`` is built (and its sources copied) for ``isa``."""
    from torch.utils import cpp_extension

    isa = cpu_isa() if isa is None else _checked(isa, "isa")
    full_name = f"foxhunt_{name}_{_key(source, _flags(isa))}"
    return Path(cpp_extension._get_build_directory(full_name, verbose=False))


def _flags(isa: str) -> list[str]:
    """foxhunt's flags; the ISA's only on x86-64 (defaults elsewhere)."""
    arch = ISA_FLAGS[isa] if platform.machine() in ("x86_64", "AMD64") else ()
    return [*BASE_FLAGS, *arch]


def _inputs(source: Path) -> list[Path]:
    return [source, *sorted(PACKAGE.glob("*.h"))]


def _key(source: Path, flags: list[str]) -> str:
    """A hash of everything that changes the build command or what it compiles."""
    parts = [f.name.encode() + b"\0" + f.read_bytes() for f in _inputs(source)]
    parts += [" ".join(flags).encode(), os.environ.get("CXX", "c++").encode()]
    parts += [torch.__version__.encode(), str(Path(torch.__file__).parent).encode()]
    parts.append(sysconfig.get_paths()["include"].encode())
    if "-march=native" in flags:
        parts.append(_cpu_features())
    return hashlib.sha256(b"\0\0".join(parts)).hexdigest()[:12]


def _cpu_features() -> bytes:
    """What a native build is specific to: the CPU's feature flags (Linux), else the platform."""
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


def _stage(files: list[Path], into: Path) -> Path:
    """Copies of ``files`` in ``into``, rewritten only when they differ (ninja goes by mtimes):
    the build command then names the same paths from every checkout. Returns the first."""
    into.mkdir(parents=True, exist_ok=True)
    for file in files:
        data, copy = file.read_bytes(), into / file.name
        if not copy.is_file() or copy.read_bytes() != data:
            partial = copy.with_name(copy.name + ".partial")
            partial.write_bytes(data)
            os.replace(partial, copy)
    return into / files[0].name


def _build(source: Path, name: str, isa: str) -> ModuleType | None:
    _ninja_on_path()
    wait = build_lock.timeout()
    flags = _flags(isa)
    try:
        folder = build_folder(source, name, isa)  # torch creates TORCH_EXTENSIONS_DIR here
    except OSError as err:  # unwritable or impossible: the run goes on without the kernel
        root = os.environ.get("TORCH_EXTENSIONS_DIR") or "the torch extensions folder"
        _failed(name, f"{root}: {err.strerror}", "Set TORCH_EXTENSIONS_DIR to a writable folder")
        return None
    log.info("loading foxhunt's %s CPU kernel (its first build on a machine takes ~1 min)", name)
    try:
        with build_lock.exclusive(folder, name, wait) as held:
            if not held:
                why = f"another process kept its build folder busy for {wait:g} s"
                _failed(name, why, f"Raise {build_lock.TIMEOUT_ENV} to wait longer")
                return None
            staged = _stage(_inputs(source), folder / "src")
            module = _compile(folder, staged, flags)
    except Exception as err:  # no compiler, no ninja, a compile error, ...
        detail = str(err).strip().splitlines()[-1] if str(err).strip() else ""
        _failed(name, f"{type(err).__name__}: {detail}", "Install a C++ compiler and ninja")
        return None
    return module


def _compile(folder: Path, staged: Path, flags: list[str]) -> ModuleType:
    """torch's build and import of ``staged`` in ``folder``. A cached module that cannot be
    imported (truncated, overwritten: ninja finds it newer than its sources and keeps it) is
    removed with a warning and built once more; it fell back to ATen on every run, blaming
    the compiler."""
    from torch.utils import cpp_extension

    def load() -> ModuleType:
        module = cpp_extension.load(
            name=folder.name,
            sources=[str(staged)],
            extra_cflags=flags,
            extra_include_paths=[str(staged.parent)],
            extra_ldflags=["-fopenmp"],
            build_directory=str(folder),
            verbose=False,
        )
        assert isinstance(module, ModuleType)
        return module

    try:
        return load()
    except ImportError as err:
        library = folder / f"{folder.name}.so"
        if not library.is_file():
            raise
        log.warning("%s cannot be loaded (%s): removed, building it again", library, err)
        library.unlink()
        # torch skips the build of a name this process already loaded, unchanged: forget it
        cpp_extension.JIT_EXTENSION_VERSIONER.entries.pop(folder.name, None)
        return load()


def _failed(name: str, why: str, fix: str) -> None:
    warnings.warn(
        f"foxhunt: could not build the {name} CPU kernel ({why}); using the slower "
        f"ATen path. {fix}, or set FOXHUNT_FUSED_KERNEL=0 to silence this.",
        RuntimeWarning,
        stacklevel=4,
    )
