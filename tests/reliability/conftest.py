"""Fixtures of the reliability tests: a bars file and one finished run per module."""

from pathlib import Path

import pytest

from foxhunt.data import generate_bars

from .helpers import train


@pytest.fixture(scope="module")
def bars_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bars") / "bars.parquet"
    generate_bars(days=6, seed=1).to_parquet(path)
    return path


@pytest.fixture
def finished(tmp_path: Path, bars_file: Path) -> Path:
    """A finished run in tmp_path/work/run (a folder of its own: nothing else beside it)."""
    run = tmp_path / "work" / "run"
    train(bars_file, run, "--checkpoint-every", "2")
    return run
