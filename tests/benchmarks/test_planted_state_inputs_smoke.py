"""benchmarks/planted_state_inputs.py on a few days of a planted cross market: the copy holds
the generator's own state per row, keeps the bars, and still scores the oracle; exit 2 on bars
without a cross lead or no file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data.planted.config import builtin_market
from foxhunt.data.planted.files import planted_config_of, same_bars, write_planted
from foxhunt.data.planted.generate import generate_planted

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "planted_state_inputs.py"


def run(*args: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_the_copy_holds_the_generators_state(tmp_path: Path) -> None:
    made = generate_planted(builtin_market(6, 0, ("ES", "NQ")))
    bars, copy = tmp_path / "all.parquet", tmp_path / "state.parquet"
    write_planted(made, bars)
    done = run(bars, copy)
    assert done.returncode == 0, done.stderr
    read = pd.read_parquet(copy)
    assert planted_config_of(copy) == made.config  # its own record: the oracle is scored
    assert same_bars(made.frame, read)
    leader, follower = (read["symbol"] == s for s in ("ES", "NQ"))
    assert (read.loc[leader, "lead_c"] == 0).all()
    # after each bar, the follower's c that the generator carried into the next one (its
    # latent record, symbol-major, holds the state before each bar; the bars round volume)
    c = made.latent["c"].to_numpy().reshape(2, -1)[1]
    np.testing.assert_allclose(read.loc[follower, "lead_c"].to_numpy()[:-1], c[1:], atol=5e-3)
    high = read["lead_high"].to_numpy()
    assert ((high >= 0) & (high <= 1)).all()
    # the two symbols' rows at one time see the same leader
    np.testing.assert_array_equal(read.loc[leader, "lead_high"], read.loc[follower, "lead_high"])
    truth = made.latent["high"].to_numpy().reshape(2, -1)[0]
    assert high[leader.to_numpy()][truth].mean() > high[leader.to_numpy()][~truth].mean() + 0.3


def test_bars_without_a_cross_lead_exit_2(tmp_path: Path) -> None:
    bars = tmp_path / "one.parquet"
    write_planted(generate_planted(builtin_market(3, 0, ("ES",))), bars)
    done = run(bars, tmp_path / "out.parquet")
    assert done.returncode == 2 and "not a planted market with a cross lead" in done.stderr
    done = run(tmp_path / "missing.parquet", tmp_path / "out.parquet")
    assert done.returncode == 2 and "missing.parquet: no such file" in done.stderr
    assert not (tmp_path / "out.parquet").exists()
