"""Kernel builds never hang and never thrash (cpp_kernels, build_lock): on a tiny C++ source
that compiles in about a second, so the mechanism is tested, not the real kernels."""

from __future__ import annotations

import fcntl
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from foxhunt import build_lock, cpp_kernels
from foxhunt.errors import ConfigError

# a Python module named as torch names the build (TORCH_EXTENSION_NAME); includes a shared
# header, which must be staged with it
TINY = r"""
#include <Python.h>
#include "fast_exp.h"
#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)
#define TEXT2(x) #x
#define TEXT(x) TEXT2(x)
static PyModuleDef tiny = {PyModuleDef_HEAD_INIT, TEXT(TORCH_EXTENSION_NAME), nullptr, -1};
PyMODINIT_FUNC PASTE(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&tiny); }
"""
LOAD = "import sys; from pathlib import Path; from foxhunt import cpp_kernels; "
LOAD += "assert cpp_kernels.load(Path(sys.argv[1]), 'tiny') is not None"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty extensions folder, nothing built in this process, native ISA."""
    if missing := cpp_kernels.missing_toolchain():
        pytest.skip(f"needs a C++ toolchain: {missing}")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    for var in (
        "FOXHUNT_CPU_ISA",
        "FOXHUNT_INT8_SIMD",
        "ATEN_CPU_CAPABILITY",
        "FOXHUNT_FUSED_KERNEL",
        "FOXHUNT_KERNEL_DEBUG",  # the optimized build's mechanism (test_debug_build.py: the other)
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cpp_kernels, "_built", {})


def tiny_source(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.cpp").write_text(TINY)
    return folder / "tiny.cpp"


def built_library(folder: Path) -> Path:
    (library,) = folder.glob("foxhunt_tiny_*.so")
    return library


def test_two_checkouts_share_one_build(tmp_path: Path) -> None:
    """The same source at two paths (two checkouts), each loaded by its own process: the
    second finds the first's build and compiles nothing."""
    first, second = tiny_source(tmp_path / "a"), tiny_source(tmp_path / "b")
    folder = cpp_kernels.build_folder(first, "tiny")
    assert cpp_kernels.build_folder(second, "tiny") == folder
    subprocess.run([sys.executable, "-c", LOAD, str(first)], check=True, timeout=120)
    library = built_library(folder)
    stamps = {p: p.stat().st_mtime_ns for p in (library, *folder.glob("*.o"))}
    subprocess.run([sys.executable, "-c", LOAD, str(second)], check=True, timeout=120)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing rebuilt
    assert "tiny.cpp" in (folder / "build.ninja").read_text()
    assert str(tmp_path / "a") not in (folder / "build.ninja").read_text()


def test_changed_source_or_isa_builds_elsewhere(tmp_path: Path) -> None:
    source = tiny_source(tmp_path / "a")
    native = cpp_kernels.build_folder(source, "tiny", "native")
    avx2 = cpp_kernels.build_folder(source, "tiny", "avx2")
    source.write_text(TINY + "// changed\n")
    assert len({native, avx2, cpp_kernels.build_folder(source, "tiny", "native")}) == 3


def test_avx2_build_targets_x86_64_v3(tmp_path: Path) -> None:
    source = tiny_source(tmp_path / "a")
    assert cpp_kernels.load(source, "tiny", "avx2") is not None
    command = (cpp_kernels.build_folder(source, "tiny", "avx2") / "build.ninja").read_text()
    if cpp_kernels.platform.machine() in ("x86_64", "AMD64"):
        assert "-march=x86-64-v3" in command and "-march=native" not in command


def test_lock_left_by_a_killed_build_is_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """torch's ``lock`` file of a dead process: torch alone would wait on it forever."""
    source = tiny_source(tmp_path / "a")
    folder = cpp_kernels.build_folder(source, "tiny")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lock").touch()
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="foxhunt"):
        assert cpp_kernels.load(source, "tiny") is not None
    assert time.monotonic() - start < 60
    assert not (folder / "lock").exists()
    assert "the lock of a foxhunt kernel build that was killed" in caplog.text


def test_waiting_for_another_build_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another live process holds the folder's lock: wait, say so once, then fall back."""
    source = tiny_source(tmp_path / "a")
    folder = cpp_kernels.build_folder(source, "tiny")
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv(build_lock.TIMEOUT_ENV, "1.5")
    with open(folder / build_lock.LOCK_NAME, "w") as held:  # a second open file: a second holder
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242\n")
        held.flush()
        start = time.monotonic()
        busy = pytest.warns(RuntimeWarning, match="kept its build folder busy for 1.5 s")
        with caplog.at_level(logging.WARNING, logger="foxhunt"), busy:
            assert cpp_kernels.load(source, "tiny") is None
    assert 1.5 <= time.monotonic() - start < 10
    waits = [r for r in caplog.records if "waiting for another process" in r.message]
    assert len(waits) == 1
    assert f"(pid 4242) building foxhunt's tiny kernel in {folder}" in waits[0].message


def test_compilers_left_by_a_killed_build_are_waited_for(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A process working in the folder (a compiler whose parent was killed) ends first."""
    source = tiny_source(tmp_path / "a")
    folder = cpp_kernels.build_folder(source, "tiny")
    folder.mkdir(parents=True, exist_ok=True)
    leftover = subprocess.Popen(["sleep", "1.5"], cwd=folder)
    try:
        with caplog.at_level(logging.WARNING, logger="foxhunt"):
            assert cpp_kernels.load(source, "tiny") is not None
        assert leftover.poll() is not None  # ended before the build began
        assert f"waiting for processes [{leftover.pid}]" in caplog.text
    finally:
        leftover.kill()
        leftover.wait()


def test_bad_timeout_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(build_lock.TIMEOUT_ENV, "soon")
    with pytest.raises(ConfigError, match="FOXHUNT_KERNEL_BUILD_TIMEOUT='soon'"):
        cpp_kernels.load(tiny_source(tmp_path / "a"), "tiny")


def test_cpu_isa_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cpp_kernels.cpu_isa() == "native"
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    assert cpp_kernels.cpu_isa() == "native"
    for capability in ("avx2", "default"):  # ATen limited: follow it
        monkeypatch.setenv("ATEN_CPU_CAPABILITY", capability)
        assert cpp_kernels.cpu_isa() == "avx2"
    monkeypatch.setenv("FOXHUNT_CPU_ISA", "native")  # an explicit choice wins
    assert cpp_kernels.cpu_isa() == "native"
    monkeypatch.delenv("FOXHUNT_CPU_ISA")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    monkeypatch.setenv("FOXHUNT_INT8_SIMD", "avx2")  # the old name
    assert cpp_kernels.cpu_isa() == "avx2"
    monkeypatch.setenv("FOXHUNT_CPU_ISA", "avx512")
    with pytest.raises(ConfigError, match="FOXHUNT_CPU_ISA='avx512': use one of"):
        cpp_kernels.cpu_isa()


def test_a_finished_build_leaves_no_torch_lock(tmp_path: Path) -> None:
    """After a build the folder holds foxhunt's lock file (its last holder's pid), not torch's."""
    source = tiny_source(tmp_path / "a")
    assert cpp_kernels.load(source, "tiny") is not None
    folder = cpp_kernels.build_folder(source, "tiny")
    assert (folder / build_lock.LOCK_NAME).read_text().strip() == str(os.getpid())
    assert not (folder / "lock").exists()


def test_a_compile_error_is_reported_at_the_source_not_its_staged_copy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The build compiles a copy in the cache folder; the warning and the log name the file
    the copy was made from, at the line the compiler reports."""
    source = tmp_path / "a" / "tiny.cpp"
    source.parent.mkdir()
    source.write_text('#include "fast_exp.h"\nint f() { return 1 }\n')
    first_error = rf"\(RuntimeError: {re.escape(str(source))}:2:\d+: error:"
    warned = pytest.warns(RuntimeWarning, match=first_error)
    with caplog.at_level(logging.WARNING, logger="foxhunt"), warned:
        assert cpp_kernels.load(source, "tiny") is None
    staged = cpp_kernels.build_folder(source, "tiny") / "src"
    assert f"{source}:2:" in caplog.text and str(staged / "tiny.cpp") not in caplog.text
