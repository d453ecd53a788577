"""``FOXHUNT_KERNEL_DEBUG=1`` (cpp_kernels): the debug build's flags and command, its own
folder, a bad value refused, and compiler errors named at the repository's files. Nothing is
compiled here: torch's build is replaced by a recorder (the debug build's own run, under the
sanitizers: docs/performance.md, "A debug build of the kernels")."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest
from torch.utils import cpp_extension

from foxhunt import build_lock, cpp_kernels
from foxhunt.errors import ConfigError
from foxhunt.model import grn_cells

SANITIZE = "-fsanitize=address,undefined"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    for var in ("FOXHUNT_KERNEL_DEBUG", "FOXHUNT_CPU_ISA", "FOXHUNT_INT8_SIMD", "CXX"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cpp_kernels, "_built", {})


@pytest.mark.parametrize("isa", ["native", "avx2"])
def test_the_debug_flags_replace_o3_and_keep_the_rest(isa: str) -> None:
    optimized, debug = cpp_kernels._flags(isa), cpp_kernels._flags(isa, debug=True)
    assert "-O3" in optimized and "-g" not in optimized
    assert not any(flag.startswith("-fsanitize") for flag in optimized)
    assert [flag for flag in debug if flag.startswith("-O")] == ["-O1"]
    for flag in ("-g", "-fno-omit-frame-pointer", SANITIZE, "-fno-sanitize-recover=undefined"):
        assert flag in debug
    # the same code paths: the math flags, OpenMP and the ISA's flags are the optimized ones
    kept = [flag for flag in debug if flag not in cpp_kernels.DEBUG_FLAGS]
    assert kept == [flag for flag in optimized if flag != "-O3"]
    assert cpp_kernels._ldflags(False) == ["-fopenmp"]
    assert cpp_kernels._ldflags(True) == ["-fopenmp", SANITIZE]  # the runtimes, linked


def test_the_switch_reads_the_usual_spellings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert build_lock.kernel_debug() is False  # unset
    for value, on in [("1", True), ("yes", True), ("ON", True), ("0", False), ("off", False)]:
        monkeypatch.setenv("FOXHUNT_KERNEL_DEBUG", value)
        assert build_lock.kernel_debug() is on
    monkeypatch.setenv("FOXHUNT_KERNEL_DEBUG", "asan")
    with pytest.raises(ConfigError, match="FOXHUNT_KERNEL_DEBUG='asan': give 1"):
        build_lock.kernel_debug()
    with pytest.raises(ConfigError, match="FOXHUNT_KERNEL_DEBUG='asan'"):
        cpp_kernels.load(grn_cells.SOURCE, "grn_cells")  # refused before any build


def test_a_debug_build_needs_the_sanitizer_runtime(tmp_path: Path) -> None:
    maps = tmp_path / "maps"
    maps.write_text("7f00 r-xp /usr/lib/x86_64-linux-gnu/libc.so.6\n")
    with pytest.raises(ConfigError, match=r"LD_PRELOAD=.*libasan\.so.*FOXHUNT_KERNEL_DEBUG"):
        build_lock.check_sanitizer_runtime(maps)
    maps.write_text("7f00 r-xp /usr/lib/gcc/x86_64-linux-gnu/12/libasan.so.8.0.0\n")
    build_lock.check_sanitizer_runtime(maps)


def test_the_debug_build_has_a_folder_of_its_own_per_checkout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Never the optimized build's folder; and, compiled in place, one per checkout (the
    optimized build of a copy elsewhere shares the folder)."""
    copy = tmp_path / "checkout" / "grn_cells.cpp"
    copy.parent.mkdir()
    copy.write_bytes(grn_cells.SOURCE.read_bytes())
    optimized = cpp_kernels.build_folder(grn_cells.SOURCE, "grn_cells", "avx2")
    assert cpp_kernels.build_folder(copy, "grn_cells", "avx2") == optimized
    monkeypatch.setenv("FOXHUNT_KERNEL_DEBUG", "1")
    debug = cpp_kernels.build_folder(grn_cells.SOURCE, "grn_cells", "avx2")
    assert debug.name.startswith("foxhunt_grn_cells_debug_") and debug != optimized
    assert cpp_kernels.build_folder(copy, "grn_cells", "avx2") not in (debug, optimized)
    assert cpp_kernels.build_folder(grn_cells.SOURCE, "grn_cells", "avx2", debug=False) == optimized


def test_the_debug_build_compiles_the_repository_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(
        cpp_extension, "load", lambda **kwargs: calls.append(kwargs) or types.ModuleType("m")
    )
    folder = tmp_path / "build"
    for debug in (False, True):
        cpp_kernels._compile(grn_cells.SOURCE, folder, "avx2", debug)
    staged, debug = calls
    assert staged["sources"] == [str(folder / "src" / "grn_cells.cpp")]
    assert staged["extra_include_paths"] == [str(folder / "src")]
    assert staged["extra_cflags"] == cpp_kernels._flags("avx2")
    assert debug["sources"] == [str(grn_cells.SOURCE)]  # the file itself, not a copy
    assert debug["extra_include_paths"] == [str(cpp_kernels.PACKAGE)]
    assert debug["extra_cflags"] == cpp_kernels._flags("avx2", debug=True)
    assert debug["extra_ldflags"] == ["-fopenmp", SANITIZE]


def test_a_compile_error_names_the_repository_file(tmp_path: Path) -> None:
    """The optimized build compiles staged copies; their paths in the compiler's output are
    mapped back to the files they copy, and the warning quotes the first error."""
    staged = tmp_path / "ext" / "foxhunt_grn_cells_abc" / "src"
    files = [grn_cells.SOURCE, cpp_kernels.PACKAGE / "fast_exp.h"]
    output = (
        f"Error building extension 'foxhunt_grn_cells_abc': [1/2] c++ -c {staged}/grn_cells.cpp\n"
        f"In file included from {staged}/grn_cells.cpp:9:\n"
        f"{staged}/fast_exp.h:12:3: error: expected ';' before '}}' token\n"
        f"{staged}/grn_cells.cpp:40:1: error: 'x' was not declared\n"
        "ninja: build stopped: subcommand failed."
    )
    text = cpp_kernels._at_repository(output, staged, files)
    assert str(staged) not in text
    assert f"{grn_cells.SOURCE}:9:" in text and f"{grn_cells.SOURCE}:40:1: error:" in text
    first = cpp_kernels._first_error(text)
    assert (
        first == f"{cpp_kernels.PACKAGE / 'fast_exp.h'}:12:3: error: expected ';' before '}}' token"
    )
    assert cpp_kernels._first_error("ninja: not found") == "ninja: not found"
