"""Fixtures of the reliability tests: a bars file and one finished run, trained once per
session; each test that changes the run gets a copy of its own."""

import shutil
from pathlib import Path

import pytest

from helpers import write_bars

from .helpers import train


@pytest.fixture(scope="session")
def bars_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six sessions, not the suite's eight: the run every test here starts from trains on them."""
    return write_bars(tmp_path_factory.mktemp("bars") / "bars.parquet", days=6)


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory, bars_file: Path) -> Path:
    """The finished run every test starts from (never changed: tests change their copies).
    Nothing run-specific names its folder, so a copy is that run, moved."""
    run = tmp_path_factory.mktemp("trained") / "run"
    train(bars_file, run, "--checkpoint-every", "2")
    assert sorted(p.name for p in run.parent.iterdir()) == ["run"], "lock or staging left"
    return run


@pytest.fixture
def finished(tmp_path: Path, trained_run: Path) -> Path:
    """A finished run in tmp_path/work/run (a folder of its own: nothing else beside it)."""
    run = tmp_path / "work" / "run"
    shutil.copytree(trained_run, run, symlinks=True)
    return run
