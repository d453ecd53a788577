"""The main job end to end through the CLI: train, predict, evaluate, resume."""

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file

from foxhunt.baselines import NAMES
from foxhunt.cli import main
from foxhunt.serving import load_run
from helpers import SYNTHETIC_CLI, TINY_CLI

SMALL = [*SYNTHETIC_CLI, *TINY_CLI, "--max-steps-per-epoch", "5", "--seed", "3"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, bars_file: Path) -> Path:
    run = tmp_path_factory.mktemp("run") / "r"
    args = ["train", "--parquet-file", str(bars_file), *SMALL, "--epochs", "2"]
    args.append("--no-report")  # nothing here reads it: tests/report and test_read_once.py do
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*args, "--output-dir", str(run)]) == 0
    (run.parent / "stdout.txt").write_text(printed.getvalue())
    return run


BASELINES = ("historical_quantiles", "zero", *NAMES)


def test_train_writes_a_self_contained_run(trained: Path, capsys: pytest.CaptureFixture) -> None:
    for name in ("model.safetensors", "config.json", "preprocessor.json", "metrics.json"):
        assert (trained / name).is_file(), name
    metrics = json.loads((trained / "metrics.json").read_text())
    assert metrics["unit"] == "basis points of log return"
    for block in (metrics["test"], *metrics["baselines"].values()):
        assert {
            "mean_quantile_loss",
            "quantile_loss",
            "q_risk_p50",
            "q_risk_p90",
            "coverage",
        } <= set(block)
    assert set(metrics["baselines"]) == set(BASELINES)
    table = (trained.parent / "stdout.txt").read_text()
    for name in ("tft", *BASELINES):
        assert f"\n{name} " in table, name
    assert "MCS 90%" in table and "DM p vs tft" in table
    assert "tft" in metrics["differences"]["mcs"]["pvalues"]
    assert set(metrics["differences"]["dm"]) == set(BASELINES)
    loaded = load_run(trained)  # the folder alone rebuilds the model
    assert loaded.config.model.quantiles == (0.1, 0.5, 0.9)
    history = [json.loads(line) for line in (trained / "history.jsonl").read_text().splitlines()]
    assert [h["epoch"] for h in history if h["event"] == "epoch"] == [0, 1]
    assert any(h["event"] == "memory_epoch_end" for h in history)


def test_predict_and_evaluate(
    trained: Path, bars_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "fc.csv"
    assert (
        main(["predict", str(trained), "--parquet-file", str(bars_file), "--output", str(out)]) == 0
    )
    text = out.read_text().splitlines()
    assert text[0].startswith("symbol,last_bar,step,timestamp,q0.1_bp,q0.5_bp,q0.9_bp")
    assert len(text) == 1 + 4  # one symbol, horizon 4
    js = tmp_path / "m.json"
    assert (
        main(["evaluate", str(trained), "--parquet-file", str(bars_file), "--json", str(js)]) == 0
    )
    metrics = json.loads(js.read_text())
    assert metrics["test"]["num_windows"] > 100
    printed = capsys.readouterr().out
    assert all(name in printed for name in BASELINES)
    assert set(metrics["baselines"]) == set(BASELINES)
    assert np.isfinite(metrics["baselines"]["garch_t"]["mean_quantile_loss"])
    fc = tmp_path / "fc.parquet"
    args = ["evaluate", str(trained), "--parquet-file", str(bars_file), "--forecasts", str(fc)]
    assert main(args) == 0
    assert len(pd.read_parquet(fc)) == metrics["test"]["num_windows"] * 4


def test_train_writes_test_forecasts(trained: Path, bars_file: Path) -> None:
    frame = pd.read_parquet(trained / "test_forecasts.parquet")
    metrics = json.loads((trained / "metrics.json").read_text())
    quantile_columns = ["q0.1", "q0.5", "q0.9"]
    expected = ["symbol", "origin", "step", "target_time", "realized_bp", *quantile_columns]
    expected += [f"{b}:{q}" for b in BASELINES for q in quantile_columns]
    assert list(frame.columns) == expected
    assert len(frame) == metrics["test"]["num_windows"] * 4  # horizon 4
    assert frame["step"].tolist()[:5] == [1, 2, 3, 4, 1]
    assert str(frame["origin"].dt.tz) == str(frame["target_time"].dt.tz) != "None"
    # consecutive 5-minute bars inside a window: the target is `step` bars after the origin
    lag = frame["target_time"] - frame["origin"]
    assert (lag == frame["step"] * pd.Timedelta("5min")).all()
    bars = pd.read_parquet(bars_file).set_index("timestamp")
    log_close = np.log(bars["close"])
    realized = (log_close - log_close.shift(1)).loc[frame["target_time"]].to_numpy() * 1e4
    np.testing.assert_allclose(frame["realized_bp"], realized, rtol=1e-5, atol=1e-6)
    # the table was scored on exactly these rows
    for name, prefix in (("tft", ""), *((b, f"{b}:") for b in BASELINES)):
        losses = [
            np.mean(np.maximum(q * e, (q - 1) * e))
            for q, e in (
                (q, frame["realized_bp"] - frame[f"{prefix}q{q:g}"]) for q in (0.1, 0.5, 0.9)
            )
        ]
        block = metrics["test"] if name == "tft" else metrics["baselines"][name]
        # an unavailable baseline (HAR on too few rows) is NaN in both
        want = pytest.approx(block["mean_quantile_loss"], rel=1e-6, nan_ok=True)
        assert np.mean(losses) == want, name


def test_resume_via_cli_matches_straight_run(tmp_path: Path, bars_file: Path) -> None:
    base = ["train", "--parquet-file", str(bars_file), *SMALL, "--no-report"]  # weights only
    assert main([*base, "--epochs", "2", "--output-dir", str(tmp_path / "straight")]) == 0
    assert main([*base, "--epochs", "1", "--output-dir", str(tmp_path / "split")]) == 0
    assert main([*base, "--epochs", "2", "--resume", str(tmp_path / "split")]) == 0
    a = load_file(tmp_path / "straight" / "model.safetensors")
    b = load_file(tmp_path / "split" / "model.safetensors")
    assert a.keys() == b.keys()
    assert all((a[k] == b[k]).all() for k in a), "resumed weights differ from the straight run"


def test_existing_run_is_not_overwritten_silently(
    trained: Path, bars_file: Path, capsys: pytest.CaptureFixture
) -> None:
    code = main(["train", "--parquet-file", str(bars_file), *SMALL, "--output-dir", str(trained)])
    assert code == 2
    assert "--resume" in capsys.readouterr().err


def test_resume_with_a_different_config_names_the_field(
    trained: Path, bars_file: Path, capsys: pytest.CaptureFixture
) -> None:
    args = ["train", "--parquet-file", str(bars_file), *SMALL, "--epochs", "3"]
    code = main([*args, "--lr", "0.01", "--resume", str(trained)])
    assert code == 2
    assert "training.lr" in capsys.readouterr().err


def test_train_predict_evaluate_report_with_the_baseline_output(
    tmp_path: Path, bars_file: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "baseline"
    args = ["train", "--parquet-file", str(bars_file), *SMALL, "--epochs", "2"]
    flags = ["--output", "baseline", "--learn-spread", "--loss-weighting", "inverse_scale"]
    flags.append("--no-calibrate")  # so the initial weights are the plain baseline
    flags.append("--no-report")  # the `report` command below renders it (charts cost seconds)
    assert main([*args, *flags, "--validate-initial", "--output-dir", str(run)]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["model"]["output"] == "baseline" and config["model"]["learn_spread"]
    assert config["training"]["loss_weighting"] == "inverse_scale"
    assert config["training"]["calibrate"] is False and config["model"]["vol_signals"] == 1
    metrics = json.loads((run / "metrics.json").read_text())
    initial = metrics["training"]["initial_val_loss"]
    assert metrics["training"]["best_val_loss"] <= initial  # the baseline was a candidate
    validation = metrics["validation_baselines"]["realized_vol"]["mean_quantile_loss"]
    unit = metrics["training"]["best_val_loss_bp"] / metrics["training"]["best_val_loss"]
    assert initial * unit == pytest.approx(validation, rel=1e-4)  # untrained = the baseline
    assert load_run(run).model.baseline is not None
    out = tmp_path / "fc.csv"
    assert main(["predict", str(run), "--parquet-file", str(bars_file), "--output", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 1 + 4
    js = tmp_path / "m.json"
    assert main(["evaluate", str(run), "--parquet-file", str(bars_file), "--json", str(js)]) == 0
    assert json.loads(js.read_text())["test"]["num_windows"] > 100
    assert main(["report", str(run)]) == 0
