"""A Parquet file of synthetic bars, as the command-line tests read them."""

from __future__ import annotations

from pathlib import Path

from foxhunt.data import generate_bars


def write_bars(path: Path, *, days: int = 8, seed: int = 1) -> Path:
    """``generate_bars(days, seed)`` written to ``path``: the suite-wide ``bars_file``
    (tests/conftest.py) is the default, eight sessions of seed 1."""
    generate_bars(days=days, seed=seed).to_parquet(path)
    return path
