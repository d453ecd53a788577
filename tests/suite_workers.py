"""The suite on several processes (pytest-xdist), wired in by ``tests/conftest.py``.

* ``pytest`` alone runs on ``workers()`` processes, scheduled ``--dist worksteal``. A run that
  names its own (``-n 0``, ``-n 4``, ``--dist``, ``--tx``), debugs (``--pdb``, ``--trace``,
  ``-s``), names single tests (``file.py::test``), or lacks pytest-xdist (``-p no:xdist``)
  runs as it says, or in this one process.
* worksteal gives each worker a run of whole modules in collection order and lets a worker
  that ran out take half of what another has left: a module-scoped fixture (a trained run, an
  export) is built once except where a module is split, and the run ends with its longest test,
  not a long module. (``--dist loadscope`` keeps modules whole but queues the slow modules of
  few tests last: on 2 cores its last 8% of the tests took about 5 of 19 minutes, mostly on one
  worker; ``loadgroup`` cannot name its groups under pytest 9.2: pytest-xdist 3.8 rewrites
  ``item._nodeid``, which pytest no longer reads.)
* ``@pytest.mark.alone``: nothing else runs while the test does (it waits for the test running
  beside it to finish, and holds the next back): tests whose short deadlines or timings a busy
  neighbour would stretch. A lock file per run: a shared ``flock`` for every test, an exclusive
  one for a lone test, behind a gate so that a stream of tests cannot starve it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from foxhunt.training.threads import available_cores

#: workers on a bigger machine: past this, worker start-up (each imports torch and collects the
#: suite) and the longest tests outweigh what more cores save, and the processes some tests
#: spawn (two DDP ranks, a tuner's workers) keep the cores busy anyway
MAX_WORKERS = 8
WORKERS_ENV = "PYTEST_XDIST_AUTO_NUM_WORKERS"  # xdist's own override of `-n auto`, honoured


def workers() -> int:
    """Worker processes for a plain ``pytest``: one per usable core, at most MAX_WORKERS."""
    chosen = os.environ.get(WORKERS_ENV, "").strip()
    if chosen:
        return int(chosen)
    return min(available_cores(), MAX_WORKERS)


def default_to_workers(config: pytest.Config) -> None:
    """Turn ``-n workers() --dist worksteal`` on where the command line left it to us."""
    if not config.pluginmanager.hasplugin("xdist") or "PYTEST_XDIST_WORKER" in os.environ:
        return  # no xdist (-p no:xdist), or a worker (or a pytest one spawned)
    option = config.option
    if option.numprocesses is not None or option.tx or option.dist != "no":
        return  # the user's choice
    if option.usepdb or option.trace or option.collectonly or option.capture == "no":
        return
    if any("::" in arg for arg in config.args):
        return  # single tests: a worker's start-up would cost more than it saves
    count = workers()
    if count > 1:
        option.numprocesses = count
        option.dist = "worksteal"


@contextmanager
def turn(folder: Path, alone: bool) -> Iterator[None]:
    """Hold the run's test lock in ``folder`` while a test runs: shared beside other tests,
    exclusive alone. The gate is held only to take the lock (or, alone, throughout): a lone test
    waiting for the exclusive lock keeps new tests from taking shared ones before it."""
    with open(folder / "gate.lock", "a") as gate, open(folder / "tests.lock", "a") as tests:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(tests, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield  # closing the files releases what is still held


def run_folder(config: pytest.Config) -> Path | None:
    """The folder all workers of this run share (the parent of each one's basetemp); None
    outside xdist."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return None
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    return factory.getbasetemp().parent
