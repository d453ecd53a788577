"""benchmarks/forecast_quality.py: its losses are the run's (or the backtest's) own, per fold
and pooled, and its interval is a bootstrap."""

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
    rows = bench.single_split_tables(frame, resamples=200)
    table = rows[rows.index("") + 3 :]  # after the differences, a blank line and the header
    names = [r.split(" | ")[0].removesuffix(" *") for r in table]
    # every forecaster with a forecast (HAR is unavailable on 8 days: too few rows)
    available = [
        n
        for n, m in metrics["baselines"].items()
        if m["mean_quantile_loss"] == m["mean_quantile_loss"]
    ]
    assert sorted(names) == sorted(["tft", *available])
    tft = next(r.split(" | ") for r in table if r.startswith("tft"))
    assert float(tft[1]) == pytest.approx(metrics["test"]["mean_quantile_loss"], abs=1e-4)
    assert float(tft[4]) == pytest.approx(metrics["test"]["coverage"]["observed"], abs=1e-3)
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


def pinball_mean(frame: pd.DataFrame, prefix: str, q: float) -> float:
    realized = frame["realized_bp"].to_numpy()
    pred = frame[f"{prefix}q{q:g}"].to_numpy()
    return float(np.mean(np.maximum(q * (realized - pred), (q - 1) * (realized - pred))))


def test_walk_forward_tables_per_fold_and_pooled(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bars = tmp_path / "bars.parquet"
    generate_bars(days=12, seed=2).to_parquet(bars)
    small = ["--lookback", "16", "--horizon", "4", "--baseline-window", "16",
             "--fast-window", "4", "--volatility-windows", "4,8", "--hidden-size", "8",
             "--variable-hidden-size", "4", "--attention-heads", "2", "--epochs", "1",
             "--max-steps-per-epoch", "2", "--batch-size", "32", "--resamples", "200"]  # fmt: skip
    runs = tmp_path / "runs"
    bench.main(["--data", str(bars), "--runs", str(runs), "--folds", "2", "--", *small])
    out = capsys.readouterr().out
    result = json.loads((runs / "seed0" / "backtest.json").read_text())
    assert len(result["folds"]) == 2 and "seed 0, walk-forward" in out
    tables = out.split("\nfold ")[1:]
    assert len(tables) == 2 and "pooled: 2 folds" in tables[-1]
    for k, block in enumerate(result["folds"]):
        rows = [r.split(" | ") for r in tables[k].splitlines() if r.startswith(("tft", "garch"))]
        tft, garch = rows[0], rows[1]
        assert float(tft[1]) == pytest.approx(block["metrics"]["mean_quantile_loss"], abs=1e-4)
        dm = block["differences"]["dm"]["garch_t"]["pvalue"]
        assert float(garch[6]) == pytest.approx(dm, abs=1e-3)
        assert garch[7].split(" ")[0] in ("in", "out")
    # pooled: the losses of every fold's test windows together, as the summary keeps them
    folds = runs / "seed0" / "folds"
    frame = pd.concat(
        [pd.read_parquet(folds / str(k) / "run" / "test_forecasts.parquet") for k in (0, 1)]
    )
    pooled = tables[-1].split("pooled:")[1]
    tft = next(r.split(" | ") for r in pooled.splitlines() if r.startswith("tft"))
    summary = result["summary"]
    assert float(tft[1]) == pytest.approx(summary["mean_quantile_loss"]["mean"], abs=1e-4)
    for column, q in ((2, 0.1), (3, 0.9)):
        assert float(tft[column]) == pytest.approx(pinball_mean(frame, "", q), abs=1e-4)
        want = pinball_mean(frame, "garch_t:", q)
        assert summary["baselines"]["garch_t"]["quantile_loss"][f"{q:g}"] == pytest.approx(want)
    levels = summary["quantile_loss"].values()
    assert np.mean(list(levels)) == pytest.approx(summary["mean_quantile_loss"]["mean"])
    # a second call reads the backtest back: the same tables, nothing run again
    bench.main(["--data", str(bars), "--runs", str(runs), "--folds", "2", "--", *small])
    assert capsys.readouterr().out.split("\nfold ")[1:] == tables
    # --versus: another backtest's TFT as a forecaster on the paired windows (here its own)
    argv = ["--data", str(bars), "--runs", str(runs), "--versus", f"again={runs / 'seed0'}"]
    bench.main(argv)
    paired = capsys.readouterr().out.split("versus again:")[1]
    assert f"pooled, {summary['windows']} paired windows" in paired
    pooled = paired.split("pooled,")[1].splitlines()
    mean = {r.split(" | ")[0].removesuffix(" *"): r.split(" | ")[1] for r in pooled if " | " in r}
    assert mean["again"] == mean["tft"] == f"{summary['mean_quantile_loss']['mean']:.4f}"
    with pytest.raises(SystemExit, match="NAME=DIR"):
        bench.main([*argv[:4], "--versus", f"tft={runs}"])


def test_bad_folds_is_one_line(bench: ModuleType, tmp_path: Path) -> None:
    bars = tmp_path / "bars.parquet"
    bars.write_bytes(b"")
    with pytest.raises(SystemExit, match="--folds 0"):
        bench.main(["--data", str(bars), "--runs", str(tmp_path), "--folds", "0"])


def test_block_bootstrap_moves_whole_blocks() -> None:
    diff = np.array([-1.0, -1.0, -3.0, -3.0])
    low, high = interval(diff, np.array([0, 0, 1, 1]), resamples=500)
    assert -3.0 <= low < high <= -1.0  # every resample mixes whole days: never outside
    constant = interval(np.full(6, 0.5), np.arange(6) // 2, resamples=50)
    assert constant == pytest.approx((0.5, 0.5))
