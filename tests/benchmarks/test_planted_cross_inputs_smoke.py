"""benchmarks/planted_cross_inputs.py on a few days of a planted cross market: the table of
correlations, the leader's raw move among the inputs that carry the lead; exit 2 without one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from foxhunt.data.planted.config import builtin_market
from foxhunt.data.planted.files import write_planted
from foxhunt.data.planted.generate import generate_planted

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "planted_cross_inputs.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_it_prints_each_inputs_correlations(tmp_path: Path) -> None:
    bars = tmp_path / "all.parquet"
    write_planted(generate_planted(builtin_market(12, 0, ("ES", "NQ"))), bars)
    done = run(str(bars))
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.split("\n\n")
    rows = {}
    for line in first.splitlines()[3:]:  # the title, the header and its rule first
        name, at_bar, remembered = (cell.strip() for cell in line.strip("| ").split("|"))
        rows[name] = (float(at_bar), float(remembered))
    assert len(rows) == 6 and all(-1 <= c <= 1 for pair in rows.values() for c in pair)
    at_bar, remembered = rows["abs(r) (the cross group's cross_vol_1)"]
    assert at_bar > 0.3 and remembered > 0.3  # the raw move carries the lead
    fits = {}
    for line in second.strip().splitlines()[2:]:
        name, share = (cell.strip() for cell in line.strip("| ").split("|"))
        fits[name] = float(share)
    assert len(fits) == 3 and all(0 <= r2 <= 1 for r2 in fits.values())
    # one input alone: its R2 is its remembered correlation squared
    assert fits["abs(r)"] == pytest.approx(remembered**2, abs=2e-3)


def test_bars_without_a_cross_lead_exit_2(tmp_path: Path) -> None:
    bars = tmp_path / "one.parquet"
    write_planted(generate_planted(builtin_market(3, 0, ("ES",))), bars)
    done = run(str(bars))
    assert done.returncode == 2 and "not a planted market with a cross lead" in done.stderr
