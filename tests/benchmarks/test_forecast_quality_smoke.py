"""benchmarks/forecast_quality.py: its losses are the run's own, its interval is a bootstrap."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import generate_bars
from foxhunt.task.bootstrap import interval

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "forecast_quality.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("forecast_quality", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scores_reproduce_the_runs_metrics(bench: ModuleType, tmp_path: Path) -> None:
    bars = tmp_path / "bars.parquet"
    generate_bars(days=8, seed=1).to_parquet(bars)
    small = ["--lookback", "16", "--horizon", "4", "--hidden-size", "8", "--attention-heads", "2",
             "--max-steps-per-epoch", "3", "--epochs", "1", "--no-report"]  # fmt: skip
    run = tmp_path / "run"
    assert main(["train", "--parquet-file", str(bars), *small, "--output-dir", str(run)]) == 0
    frame = pd.read_parquet(run / "test_forecasts.parquet")
    scores = bench.score(frame, resamples=200)
    metrics = json.loads((run / "metrics.json").read_text())
    assert {"realized_vol", "garch_t", "historical_quantiles"} <= set(scores)
    assert set(scores) <= set(metrics["baselines"]) - {"zero"}
    rows = bench.difference_rows(frame, resamples=200)
    assert sorted(r.split(" | ")[0] for r in rows) == sorted(["tft", *metrics["baselines"]])
    for name, measures in scores.items():
        s = measures["mean"]
        assert s["tft"] == pytest.approx(metrics["test"]["mean_quantile_loss"], rel=1e-6)
        assert s["baseline"] == pytest.approx(
            metrics["baselines"][name]["mean_quantile_loss"], rel=1e-6
        )
        assert s["low"] <= s["diff"] <= s["high"]
        for q in ("0.1", "0.9"):  # each quantile's own loss, as metrics.json has it
            tail = measures[f"q{q}"]
            assert tail["tft"] == pytest.approx(metrics["test"]["quantile_loss"][q], rel=1e-6)
            want = metrics["baselines"][name]["quantile_loss"][q]
            assert tail["baseline"] == pytest.approx(want, rel=1e-6)


def test_block_bootstrap_moves_whole_blocks() -> None:
    diff = np.array([-1.0, -1.0, -3.0, -3.0])
    low, high = interval(diff, np.array([0, 0, 1, 1]), resamples=500)
    assert -3.0 <= low < high <= -1.0  # every resample mixes whole days: never outside
    constant = interval(np.full(6, 0.5), np.arange(6) // 2, resamples=50)
    assert constant == pytest.approx((0.5, 0.5))
