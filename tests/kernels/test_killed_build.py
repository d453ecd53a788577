"""A real kernel build killed with SIGKILL does not stop the next foxhunt process: `foxhunt
train` then finishes (torch alone would wait forever on the build's lock file).

The build's ninja and compilers are killed with it, so the next process builds at once.
Compilers left running by a killed parent, which the next build waits for, are tested on a
tiny source (tests/kernels/test_build.py): here they made this test wait for a second full
compile of the real kernel."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from foxhunt import build_lock, cpp_kernels
from foxhunt.model import grn_cells
from helpers import SYNTHETIC_CLI, TINY_CLI

TRAIN = [
    "train",
    *SYNTHETIC_CLI,
    *TINY_CLI,
    "--max-steps-per-epoch",
    "2",
    "--epochs",
    "1",
    "--no-report",
]


def wait_for(condition: str, check: Callable[[], object], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {condition}")
        time.sleep(0.1)


def kill_workers(folder: Path) -> None:
    """Kill the processes working in ``folder``: a killed build's ninja and compilers."""
    for pid in build_lock.workers(folder):
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_train_runs_after_a_kernel_build_was_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if missing := cpp_kernels.missing_toolchain():
        pytest.skip(f"needs a C++ toolchain: {missing}")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "1")
    folder = cpp_kernels.build_folder(grn_cells.SOURCE, "grn_cells")
    build = "from foxhunt.model import grn_cells; grn_cells.load()"
    builder = subprocess.Popen([sys.executable, "-c", build])
    try:

        def compiling() -> bool:  # build.ninja written, ninja or the compiler running in it
            return (folder / "build.ninja").exists() and bool(build_lock.workers(folder))

        wait_for("the build to start", compiling, 120)
        time.sleep(1)
        os.kill(builder.pid, signal.SIGKILL)
        builder.wait()
        kill_workers(folder)  # its ninja and compilers (each in a process group of its own)
        assert (folder / "lock").exists()  # torch's, left behind
        start = time.monotonic()
        args = [sys.executable, "-m", "foxhunt", *TRAIN, "--output-dir", str(tmp_path / "run")]
        run = subprocess.run(args, capture_output=True, text=True, timeout=300)
        took = time.monotonic() - start
    finally:
        builder.kill()
        kill_workers(folder)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "could not build" not in run.stderr
    assert "the lock of a foxhunt kernel build that was killed" in run.stderr
    assert list(folder.glob("foxhunt_grn_cells_*.so"))
    print(f"\ntrain after the killed build: {took:.0f} s")
    print("\n".join(line for line in run.stderr.splitlines() if "kernel" in line))
