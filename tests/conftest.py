"""Suite-wide settings and fixtures."""

import os
import sys
from collections.abc import Callable, Generator
from contextlib import nullcontext
from pathlib import Path
from types import ModuleType

import pytest
import torch
from hypothesis import settings

from foxhunt import cpp_kernels

# the shared test helpers import as ``helpers`` (tests/helpers/), here and in spawned workers
TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

import suite_workers  # noqa: E402 (tests/ is on sys.path from here on)

# One intra-op thread, in each xdist worker too (one worker per core, suite_workers.py): the
# tiny models here gain nothing from more, and a busy 2-core machine with spinning OpenMP
# threads can slow a multi-threaded step down a hundredfold.
torch.set_num_threads(1)
# and the foxhunt processes tests spawn alike: never a count chosen by the machine's load
# (training/threads.py), so that two runs a test compares use the same one
os.environ.setdefault("OMP_NUM_THREADS", "1")

# CI draws the same property and fuzz examples every run, so that a submission lands or not on
# its own merits; elsewhere every run draws new ones, which is how new failures are found.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the options set here
def pytest_cmdline_main(config: pytest.Config) -> None:
    suite_workers.default_to_workers(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Under xdist, a test marked ``alone`` runs with no other beside it (setup, call and
    teardown, the module fixtures it builds or ends included)."""
    folder = suite_workers.run_folder(item.config)
    alone = item.get_closest_marker("alone") is not None
    with suite_workers.turn(folder, alone) if folder else nullcontext():
        return (yield)


@pytest.fixture(scope="session")
def require_kernel() -> Callable[[ModuleType | None, str], ModuleType]:
    """``require_kernel(module, what)``: the module of a kernel build, checked. Skips only
    where no kernel can be built (no C++ compiler or ninja, or FOXHUNT_FUSED_KERNEL=0) and
    fails elsewhere: a kernel that stops compiling is a bug, not a skip."""

    def check(module: ModuleType | None, what: str) -> ModuleType:
        if module is not None:
            return module
        if not cpp_kernels.enabled():
            pytest.skip(f"{what}: FOXHUNT_FUSED_KERNEL=0 turns foxhunt's kernels off")
        missing = cpp_kernels.missing_toolchain()
        if missing:
            pytest.skip(f"{what} cannot be built here ({missing}): foxhunt falls back to ATen")
        pytest.fail(
            f"{what} did not build although a C++ compiler and ninja are here (see the "
            "RuntimeWarning)"
        )

    return check


@pytest.fixture(scope="session")
def bars_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight sessions of synthetic bars (seed 1) in a Parquet file, written once: tests read
    it, never change it (a module that needs other bars overrides this fixture)."""
    from helpers import write_bars  # tests/ is on sys.path only once this file has run

    return write_bars(tmp_path_factory.mktemp("bars") / "bars.parquet")
