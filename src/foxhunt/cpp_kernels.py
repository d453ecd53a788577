"""foxhunt's C++ CPU kernels, compiled on first use by ``torch.utils.cpp_extension``.

Two kernels: a VSN's per-variable GRNs, whole (``model/grn_cells.cpp``), and the int8
Linear of int8 exports (``quant/int8_linear.cpp``). Each is built the first time it is
needed (about half a minute of one core) into a folder under ``TORCH_EXTENSIONS_DIR`` (by default
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

A compile error is reported at the repository's file and line (the staged copy's path is
mapped back), in the warning and, whole, in the log. ``FOXHUNT_KERNEL_DEBUG=1`` builds the
kernels for debugging instead: ``-g -O1 -fno-omit-frame-pointer`` with AddressSanitizer and
UBSan (any UB aborts), compiled from the repository's files themselves (so the debugger and
the sanitizers' reports name them) into a folder of its own, never the optimized build's. A
failed debug build raises rather than falling back. The process needs the ASan runtime
loaded first, and libstdc++ with it (:data:`foxhunt.build_lock.ASAN_PRELOAD`); UBSan's
stack traces are asked for by ``UBSAN_OPTIONS=halt_on_error=1,print_stacktrace=1``
(docs/performance.md, "A debug build of the kernels", has the whole line).
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
SANITIZERS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=undefined")
DEBUG_FLAGS = ("-g", "-O1", "-fno-omit-frame-pointer", *SANITIZERS)  # in place of -O3
_UNSET = object()
_built: dict[tuple[Path, str, bool], object] = {}


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
    debug = build_lock.kernel_debug()
    module = _built.get((source, isa, debug), _UNSET)
    if module is _UNSET:
        if debug:
            build_lock.check_sanitizer_runtime()
        module = _built[(source, isa, debug)] = _build(source, name, isa, debug)
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


def build_folder(
    source: Path, name: str, isa: str | None = None, debug: bool | None = None
) -> Path:
    """Where ``source`` is built (and, optimized, its sources copied) for ``isa``; ``debug``:
    the debug build's folder (by default ``FOXHUNT_KERNEL_DEBUG``), which names the sources'
    own paths (compiled in place) and is never the optimized build's."""
    from torch.utils import cpp_extension

    isa = cpu_isa() if isa is None else _checked(isa, "isa")
    debug = build_lock.kernel_debug() if debug is None else debug
    key = _key(source, _flags(isa, debug), _ldflags(debug), debug)
    full_name = f"foxhunt_{name}_{'debug_' if debug else ''}{key}"
    return Path(cpp_extension._get_build_directory(full_name, verbose=False))


def _flags(isa: str, debug: bool = False) -> list[str]:
    """foxhunt's compile flags; the ISA's only on x86-64 (defaults elsewhere). The debug
    build keeps the math flags and the ISA (the same code paths), with -g -O1 and the
    sanitizers for -O3."""
    arch = ISA_FLAGS[isa] if platform.machine() in ("x86_64", "AMD64") else ()
    base = [f for f in BASE_FLAGS if f != "-O3"] + list(DEBUG_FLAGS) if debug else BASE_FLAGS
    return [*base, *arch]


def _ldflags(debug: bool) -> list[str]:
    """The link's flags: OpenMP, and the sanitizers' runtimes for a debug build."""
    return ["-fopenmp", *(SANITIZERS[:1] if debug else ())]


def _inputs(source: Path) -> list[Path]:
    return [source, *sorted(PACKAGE.glob("*.h"))]


def _key(source: Path, flags: list[str], ldflags: list[str], in_place: bool) -> str:
    """A hash of everything that changes the build command or what it compiles (an in-place
    build's command names the sources' paths: one folder per checkout)."""
    name = str if in_place else (lambda f: f.name)
    parts = [name(f).encode() + b"\0" + f.read_bytes() for f in _inputs(source)]
    parts += [" ".join(flags + ldflags).encode(), os.environ.get("CXX", "c++").encode()]
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


def _build(source: Path, name: str, isa: str, debug: bool) -> ModuleType | None:
    """The built module, or None (warned) when it cannot be built; a debug build raises."""
    _ninja_on_path()
    wait = build_lock.timeout()
    try:
        folder = build_folder(source, name, isa, debug)  # torch creates TORCH_EXTENSIONS_DIR
    except OSError as err:  # unwritable or impossible: the run goes on without the kernel
        if debug:
            raise
        root = os.environ.get("TORCH_EXTENSIONS_DIR") or "the torch extensions folder"
        _failed(name, f"{root}: {err.strerror}", "Set TORCH_EXTENSIONS_DIR to a writable folder")
        return None
    kind = " (its debug build)" if debug else ""
    log.info("loading foxhunt's %s CPU kernel%s (a first build takes ~30 s)", name, kind)
    try:
        with build_lock.exclusive(folder, name, wait) as held:
            if not held:
                why = f"another process kept its build folder busy for {wait:g} s"
                if debug:
                    raise RuntimeError(why)
                _failed(name, why, f"Raise {build_lock.TIMEOUT_ENV} to wait longer")
                return None
            module = _compile(source, folder, isa, debug)
    except Exception as err:  # no compiler, no ninja, a compile error, ...
        text = _at_repository(str(err).strip(), folder / "src", _inputs(source))
        if debug:
            raise RuntimeError(text) from None
        fix = "Install a C++ compiler and ninja"
        if "error:" in text:  # the compiler's: its first error here, all it said in the log
            log.warning("foxhunt's %s CPU kernel did not compile:\n%s", name, text)
            fix = "Fix the source (the log has the compiler's output)"
        _failed(name, f"{type(err).__name__}: {_first_error(text)}", fix)
        return None
    return module


def _compile(source: Path, folder: Path, isa: str, debug: bool) -> ModuleType:
    """torch's build and import: of staged copies (optimized: one build for every checkout),
    or of the repository's own files (debug: what the debugger and the sanitizers name). A
    cached module that cannot be imported (truncated, overwritten: ninja finds it newer than
    its sources and keeps it) is removed with a warning and built once more; it fell back to
    ATen on every run, blaming the compiler."""
    from torch.utils import cpp_extension

    compiled = source if debug else _stage(_inputs(source), folder / "src")

    def load() -> ModuleType:
        module = cpp_extension.load(
            name=folder.name,
            sources=[str(compiled)],
            extra_cflags=_flags(isa, debug),
            extra_include_paths=[str(PACKAGE if debug else compiled.parent)],
            extra_ldflags=_ldflags(debug),
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


def _at_repository(text: str, staged: Path, files: list[Path]) -> str:
    """A build's output with each staged copy's path replaced by the file it copies, so that
    a compiler error names the repository's file, not the cache's."""
    for file in files:
        text = text.replace(str(staged / file.name), str(file))
    return text


def _first_error(text: str) -> str:
    """The compiler's first error line (``file:line:col: error: ...``), else the last line."""
    lines = text.splitlines()
    return next((line for line in lines if "error:" in line), lines[-1] if lines else "")


def _failed(name: str, why: str, fix: str) -> None:
    warnings.warn(
        f"foxhunt: could not build the {name} CPU kernel ({why}); using the slower "
        f"ATen path. {fix}, or set FOXHUNT_FUSED_KERNEL=0 to silence this.",
        RuntimeWarning,
        stacklevel=4,
    )
