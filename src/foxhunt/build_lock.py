"""One foxhunt process at a time builds a kernel folder, and a killed build never blocks the next.

torch's ``cpp_extension`` guards a build folder with a ``lock`` file (``FileBaton``) that only
the process which made it removes: after a Ctrl-C, ``kill -9`` or timeout mid-build it stays,
and every later process waits on it forever, silently. foxhunt first takes an OS lock of its
own (``fcntl.flock`` on ``foxhunt.lock`` in the same folder), which the OS releases when its
holder dies. Its holder is the only foxhunt process that can be building the folder, so a
torch ``lock`` found there is stale and is removed. Killing the parent does not stop the ninja
and compilers it started: the holder first waits for the processes whose working directory is
the folder (Linux, ``/proc/PID/cwd``) to end. Every wait is bounded
(``FOXHUNT_KERNEL_BUILD_TIMEOUT`` seconds, default 600).

Without fcntl (Windows) there is no OS lock: the build runs as torch runs it, and a ``lock``
left by a killed build has to be deleted by hand (torch's wait names its folder).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from foxhunt.errors import ConfigError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

TIMEOUT_ENV = "FOXHUNT_KERNEL_BUILD_TIMEOUT"
DEFAULT_TIMEOUT = 600.0
LOCK_NAME = "foxhunt.lock"  # ours; torch's is "lock"
POLL = 0.2  # seconds between checks while waiting


def timeout() -> float:
    """Seconds to wait for another build of the same kernel (``FOXHUNT_KERNEL_BUILD_TIMEOUT``)."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < math.inf:  # also refuses nan; inf would wait for ever
        raise ConfigError(
            f"{TIMEOUT_ENV}={raw!r}: give a finite number of seconds above 0, or unset it "
            f"(default {DEFAULT_TIMEOUT:.0f})"
        )
    return seconds


SWITCH_ENV = "FOXHUNT_FUSED_KERNEL"
SWITCH_OFF, SWITCH_ON = ("0", "false", "off", "no"), ("", "1", "true", "on", "yes")
ISA_ENVS = ("FOXHUNT_CPU_ISA", "FOXHUNT_INT8_SIMD")  # the second is the first's old name
ISAS = ("avx2", "native")  # cpp_kernels.ISA_FLAGS' keys


def kernels_enabled() -> bool:
    """``FOXHUNT_FUSED_KERNEL``: 0/false/off/no turn foxhunt's C++ kernels off, 1/true/on/yes
    (or unset) on; anything else is refused (``false`` once left them on, unsaid)."""
    raw = os.environ.get(SWITCH_ENV, "1").strip().lower()
    if raw not in SWITCH_OFF + SWITCH_ON:
        raise ConfigError(
            f"{SWITCH_ENV}={os.environ[SWITCH_ENV]!r}: give 0 (the ATen path) or 1 (the C++ "
            "kernels), or unset it"
        )
    return raw not in SWITCH_OFF


def isa_from_environment() -> str | None:
    """``FOXHUNT_CPU_ISA`` (or its old name), checked; None when neither is set."""
    for var in ISA_ENVS:
        value = os.environ.get(var, "").strip()
        if value:
            if value not in ISAS:
                raise ConfigError(f"{var}={value!r}: use one of {list(ISAS)}, or unset it")
            return value
    return None


DEBUG_ENV = "FOXHUNT_KERNEL_DEBUG"
# the sanitizers' runtime must be the first library a process loads: python is not built
# with it, so it is preloaded; and libstdc++ with it, or ASan's interceptor of C++ throws
# finds no real __cxa_throw and aborts the first exception another extension (onnx) throws
ASAN_PRELOAD = (
    'LD_PRELOAD="$(${CXX:-c++} -print-file-name=libasan.so) '
    '$(${CXX:-c++} -print-file-name=libstdc++.so)" ASAN_OPTIONS=detect_leaks=0'
)


def kernel_debug() -> bool:
    """``FOXHUNT_KERNEL_DEBUG``: 1/true/on/yes builds the kernels for debugging (-g -O1,
    AddressSanitizer and UBSan; cpp_kernels), 0/false/off/no (or unset) optimized; anything
    else is refused."""
    raw = os.environ.get(DEBUG_ENV, "").strip().lower()
    if raw not in SWITCH_OFF + SWITCH_ON:
        raise ConfigError(
            f"{DEBUG_ENV}={os.environ[DEBUG_ENV]!r}: give 1 (the kernels built with -g -O1 and "
            "the address and undefined-behaviour sanitizers) or 0, or unset it"
        )
    return raw not in (*SWITCH_OFF, "")


def check_sanitizer_runtime(maps_file: Path = Path("/proc/self/maps")) -> None:
    """Refuse a debug build in a process without the ASan runtime loaded (importing the
    built module would fail). Linux only: elsewhere the loader's own error says it."""
    try:
        maps = maps_file.read_text()
    except OSError:
        return
    if "libasan" not in maps and "libclang_rt.asan" not in maps:
        raise ConfigError(
            f"{DEBUG_ENV}=1 builds the kernels with AddressSanitizer, whose runtime this "
            f"process lacks: run it as {ASAN_PRELOAD} python ... (or unset {DEBUG_ENV})"
        )


def check_kernel_environment() -> None:
    """Refuse a bad kernel variable before a run starts (it was refused at the first
    forward, and the build timeout only when a build waited)."""
    if kernels_enabled():
        isa_from_environment()
        timeout()
        if kernel_debug():
            check_sanitizer_runtime()


@contextmanager
def exclusive(folder: Path, what: str, wait: float) -> Iterator[bool]:
    """Hold ``folder``'s build lock while the block runs, with what a killed build left behind
    cleared. Yields False (build nothing, fall back) when that took over ``wait`` seconds."""
    if fcntl is None:
        yield True
        return
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    with open(folder / LOCK_NAME, "a+") as handle:  # "a+": keep the holder's pid readable
        if not _acquire(handle, deadline, what, folder):
            yield False
            return
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            if not _await_leftovers(folder, deadline, what):
                yield False
                return
            stale = folder / "lock"
            if stale.exists():
                stale.unlink(missing_ok=True)
                log.warning("removed %s, the lock of a foxhunt kernel build that was killed", stale)
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _acquire(handle: IO[str], deadline: float, what: str, folder: Path) -> bool:
    assert fcntl is not None
    said = False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        if not said:
            handle.seek(0)
            pid = handle.read().strip() or "unknown"
            log.warning(
                "waiting for another process (pid %s) building foxhunt's %s kernel in %s",
                pid,
                what,
                folder,
            )
            said = True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def _await_leftovers(folder: Path, deadline: float, what: str) -> bool:
    """Wait until no process works in ``folder``: the ninja and compilers of a killed build
    finish on their own, and a second build racing them could link half-written objects."""
    said = False
    while pids := workers(folder):
        if not said:
            log.warning(
                "waiting for processes %s, left running by a killed build of foxhunt's %s "
                "kernel, to finish in %s",
                pids,
                what,
                folder,
            )
            said = True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)
    return True


def workers(folder: Path) -> list[int]:
    """Processes (ours to see) whose working directory is ``folder``; none where there is no
    /proc."""
    target, me, found = str(folder.resolve()), os.getpid(), []
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if os.readlink(entry / "cwd") == target:
                found.append(int(entry.name))
        except OSError:  # gone, a zombie, or another user's
            continue
    return found
