"""A run fed the feature library end to end: train records the spec, predict and evaluate
rebuild the same inputs from the run folder alone."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import generate_bars
from helpers import TINY_CLI

GROUPS = "returns:3/6,realized:4,location:3,trend:4,cross:3,cycles,instrument"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("library")
    bars = root / "bars.parquet"
    generate_bars(days=6, seed=2, symbols=("ES", "NQ")).to_parquet(bars)
    args = ["train", "--parquet-file", str(bars), *TINY_CLI, "--calendar", "none"]
    args += ["--feature-groups", GROUPS, "--max-steps-per-epoch", "3", "--epochs", "1"]
    args.append("--no-report")  # the HTML report's charts cost seconds; nothing here reads it
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*args, "--output-dir", str(root / "run")]) == 0
    return root / "run", bars


def test_the_run_records_its_spec(run: tuple[Path, Path]) -> None:
    folder, _ = run
    config = json.loads((folder / "config.json").read_text())
    assert config["data"]["feature_groups"] == GROUPS.split(",")
    spec = json.loads((folder / "preprocessor.json").read_text())["spec"]
    assert spec["groups"][0] == "returns:3/6" and set(spec["instrument"]) == {"ES", "NQ"}
    assert config["model"]["num_static"] == 4  # the instrument descriptors, and the symbol


def test_evaluate_rebuilds_the_runs_test_forecasts(run: tuple[Path, Path], tmp_path: Path) -> None:
    folder, bars = run
    forecasts = tmp_path / "fc.parquet"
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(
                [
                    "evaluate",
                    str(folder),
                    "--parquet-file",
                    str(bars),
                    "--forecasts",
                    str(forecasts),
                ]
            )
            == 0
        )
    again = pd.read_parquet(forecasts)
    trained = pd.read_parquet(folder / "test_forecasts.parquet")
    keys = ["symbol", "origin", "step"]
    merged = trained.merge(again, on=keys, suffixes=("", "_again"))
    assert len(merged) == len(trained) > 0
    np.testing.assert_allclose(merged["q0.5"], merged["q0.5_again"], rtol=1e-5, atol=1e-7)


def test_predict_from_the_run_folder(run: tuple[Path, Path], tmp_path: Path) -> None:
    folder, bars = run
    out = tmp_path / "fc.csv"
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(["predict", str(folder), "--parquet-file", str(bars), "--output", str(out)]) == 0
        )
    table = pd.read_csv(out)
    assert set(table["symbol"]) == {"ES", "NQ"} and table["q0.5_bp"].notna().all()
