"""A run of the tft-225 preset (its 200+ library inputs, a tiny network) through every door
that rebuilds its inputs from the run folder alone: evaluate and predict on the run, and on
its ONNX export, give the run's own test forecasts."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from helpers import TINY_CLI
from helpers.calendar_bars import calendar_bars

KEYS = ["symbol", "origin", "step"]


def _main(args: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 0


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tft225")
    bars = root / "bars.parquet"
    calendar_bars("2026-01-05", "2026-02-06").to_parquet(bars)  # 24 CME sessions of 5-min bars
    args = ["train", "--parquet-file", str(bars), "--preset", "tft-225", *TINY_CLI, "--no-report"]
    _main([*args, "--max-steps-per-epoch", "3", "--epochs", "1", "--output-dir", str(root / "run")])
    _main(["export", str(root / "run"), "--onnx"])
    return root / "run", bars


def _same(run: pd.DataFrame, again: pd.DataFrame, *, rtol: float) -> None:
    """Every window the run forecast on its test split, forecast again alike (evaluate
    forecasts every window of the file: the test split's are among them)."""
    merged = run.merge(again, on=KEYS, suffixes=("", "_again"))
    assert len(merged) == len(run) > 0
    columns = [c for c in run.columns if c.startswith("q0.")]
    assert columns
    for c in columns:
        np.testing.assert_allclose(merged[c], merged[f"{c}_again"], rtol=rtol, atol=1e-7)


def test_the_run_has_the_seeds_shape_of_inputs(run: tuple[Path, Path]) -> None:
    config = json.loads((run[0] / "config.json").read_text())["model"]
    assert config["num_past"] - config["num_future"] >= 210 and config["num_future"] == 10


@pytest.mark.parametrize("door", ["", "onnx"])
def test_evaluate_gives_the_runs_test_forecasts(
    run: tuple[Path, Path], door: str, tmp_path: Path
) -> None:
    folder, bars = run
    out = tmp_path / "fc.parquet"
    _main(["evaluate", str(folder / door), "--parquet-file", str(bars), "--forecasts", str(out)])
    # ONNX Runtime sums in its own order: float32 rounding, not a different model
    _same(pd.read_parquet(folder / "test_forecasts.parquet"), pd.read_parquet(out), rtol=1e-4)


def test_predict_on_the_export_gives_the_runs_forecast(
    run: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, bars = run
    tables = []
    for door in ("", "onnx"):
        out = tmp_path / f"fc{door}.csv"
        _main(["predict", str(folder / door), "--parquet-file", str(bars), "--output", str(out)])
        tables.append(pd.read_csv(out))
    plain, onnx = tables
    assert len(plain) == len(onnx) > 0
    bp = [c for c in plain.columns if c.endswith("_bp")]
    np.testing.assert_allclose(plain[bp].to_numpy(), onnx[bp].to_numpy(), rtol=1e-4, atol=1e-5)
