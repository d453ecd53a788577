"""A tiny backtest end to end: the schema, a kill during fold 3 resumed to the same result,
and the command line (bad input: exit 2 with one line)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from foxhunt.backtest import BacktestConfig, run_backtest
from foxhunt.baselines import NAMES
from foxhunt.cli import main
from foxhunt.data import DataConfig
from foxhunt.model.config import TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.training.config import TrainingConfig

DATA = DataConfig(
    synthetic_market="garch",
    synthetic_days=12,
    lookback=16,
    horizon=4,
    baseline_window=16,
    fast_window=4,
    volatility_windows=(4, 8),
)
CONFIG = RunConfig(
    data=DATA,
    model=TFTConfig(
        hidden_size=8,
        variable_hidden_size=4,
        attention_heads=2,
    ),
    training=TrainingConfig(epochs=2, max_steps_per_epoch=2, batch_size=32, patience=0),
)
BT = BacktestConfig(folds=3, embargo="1h", resamples=200, checkpoint_every=1)


class Killed(Exception):
    pass


class KillAtStep:
    """Dies in the middle of a fold's training, after its checkpoint of step 2."""

    def on_step_end(self, trainer: Any, *args: Any, **kwargs: Any) -> None:
        if trainer.state.global_step >= 3:
            raise Killed


def without_timings(result: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(result))
    out.pop("timing")
    for fold in out["folds"]:
        fold.pop("seconds")
    return out


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_backtest(CONFIG, tmp_path_factory.mktemp("whole"), BT)


def test_backtest_json_schema(uninterrupted: dict[str, Any]) -> None:
    assert len(uninterrupted["folds"]) == 3
    for k, fold in enumerate(uninterrupted["folds"]):
        assert fold["index"] == k
        for span in ("train", "test"):
            assert pd.Timestamp(fold[span]["start"]).tzinfo is not None  # ISO with an offset
        assert fold["embargo"] == "3600s"
        assert set(fold["windows"]) >= {"train", "test", "purged"}
        assert fold["windows"]["purged"] > 0
        assert {"mean_quantile_loss", "coverage", "crps", "q_risk_p50"} <= set(fold["metrics"])
        assert set(fold["baselines"]) == {"historical_quantiles", "zero", *NAMES}
        assert set(fold["differences"]["dm"]) == set(fold["baselines"])
        assert set(fold["signal"]) == {"tft", *fold["baselines"]}
        for signal in fold["signal"].values():
            assert {"net_pnl", "gross_pnl", "sharpe", "turnover", "max_drawdown"} <= set(signal)
        assert set(fold["calibration"]["session_part"]["tft"]) == {
            "overnight", "cash_open", "midday", "close"
        }  # fmt: skip
    summary = uninterrupted["summary"]
    low, high = summary["mean_quantile_loss"]["ci95"]
    assert low <= summary["mean_quantile_loss"]["mean"] <= high
    assert "deflated_sharpe" in summary and "garch_t" in summary["tft_minus"]
    assert "tft" in summary["differences"]["mcs"]["pvalues"]
    folds = uninterrupted["folds"]
    assert folds[0]["test"]["end"] == folds[1]["test"]["start"]  # consecutive, not overlapping


def test_each_fold_says_whose_weights_forecast(
    uninterrupted: dict[str, Any], tmp_path: Path
) -> None:
    """The trained weights or the calibrated head the gate kept: backtest.json, the fold's
    line of the summary table, from the fold's run's metrics.json."""
    from foxhunt.backtest.fold_job import weights_of
    from foxhunt.cli.backtest import summary_table

    labels = ("trained", "initial", "head:ewma", "head:har", "head:garch_t", "head:realized_vol")
    assert all(fold["weights"] in labels for fold in uninterrupted["folds"])
    for weights in ("trained", "initial"):
        run = tmp_path / weights
        run.mkdir()
        kept = {"training": {"kept_initial": weights == "initial"}}
        (run / "metrics.json").write_text(json.dumps(kept))
        assert weights_of(run) == weights
        result = json.loads(json.dumps(uninterrupted))
        result["folds"][1]["weights"] = weights
        line = summary_table(result).splitlines()[2]
        assert line.startswith(f"fold 1 ({weights} weights") and "tft " in line
    served = {"training": {"kept_initial": True, "served_head": "garch_t"}}
    (tmp_path / "trained" / "metrics.json").write_text(json.dumps(served))
    assert weights_of(tmp_path / "trained") == "head:garch_t"
    result["folds"][1]["weights"] = "head:garch_t"
    assert summary_table(result).splitlines()[2].startswith("fold 1 (the garch_t head: it beat")
    (tmp_path / "trained" / "metrics.json").write_text("[1]")
    assert weights_of(tmp_path / "trained") is None and weights_of(tmp_path / "none") is None


def test_killed_during_fold_3_resumes_to_the_same_result(
    tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    with pytest.raises(Killed):
        run_backtest(CONFIG, tmp_path, BT, callbacks=lambda k: (KillAtStep(),) if k == 2 else ())
    assert (tmp_path / "folds" / "1" / "result.json").is_file()
    assert not (tmp_path / "folds" / "2" / "result.json").exists()
    assert any((tmp_path / "folds" / "2" / "run" / "checkpoints").iterdir())
    resumed = run_backtest(CONFIG, tmp_path, BT)
    assert without_timings(resumed) == without_timings(uninterrupted)


def test_cli_backtest_writes_json_and_report(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    args = [
        "backtest",
        "--synthetic-market",
        "garch",
        "--synthetic-days",
        "10",
        "--lookback",
        "16",
        "--horizon",
        "4",
    ]
    args += ["--baseline-window", "16", "--fast-window", "4", "--hidden-size", "8"]
    args += ["--epochs", "1", "--max-steps-per-epoch", "1", "--folds", "2", "--test-size", "1d"]
    args += ["--resamples", "100", "--output-dir", str(tmp_path)]
    assert main(args) == 0
    result = json.loads((tmp_path / "backtest.json").read_text())
    assert result["config"]["costs"]["commission"] == 2.25
    assert (tmp_path / "report" / "backtest.html").stat().st_size > 1000
    printed = capsys.readouterr().out
    assert "fold 1:" in printed and "all folds: in the 90% MCS: " in printed


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--test-size", "soon"], "--test-size"),
        (["--embargo", "-1h"], "--embargo"),
        (["--folds", "0"], "--folds"),
        (["--refit", "warm", "--jobs", "2"], "--jobs 1"),
        (
            [
                "--folds",
                "30",
                "--test-size",
                "5d",
                "--synthetic-market",
                "garch",
                "--synthetic-days",
                "5",
            ],
            "fewer",
        ),
    ],
)
def test_bad_input_is_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, flags: list[str], message: str
) -> None:
    assert main(["backtest", *flags, "--output-dir", str(tmp_path / "bt")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_refit_warm_starts_each_fold_from_the_previous_ones_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foxhunt.backtest import fold_job

    starts: list[Path] = []
    original = fold_job._warm_start

    def spy(previous: Path) -> Any:
        starts.append(previous)
        return original(previous)

    monkeypatch.setattr(fold_job, "_warm_start", spy)
    result = run_backtest(CONFIG, tmp_path, replace(BT, refit="warm"))
    assert len(result["folds"]) == 3
    assert starts == [tmp_path / "folds" / str(k) / "run" for k in (0, 1)]


def test_refit_none_forecasts_every_fold_with_the_first_model(tmp_path: Path) -> None:
    result = run_backtest(CONFIG, tmp_path, replace(BT, refit="none"))
    assert len(result["folds"]) == 3
    assert (tmp_path / "folds" / "0" / "run" / "model.safetensors").is_file()
    for k in (1, 2):  # no model of their own: fold 0's forecasts their test spans
        run = tmp_path / "folds" / str(k) / "run"
        assert not (run / "model.safetensors").exists()
        frame = pd.read_parquet(run / "test_forecasts.parquet")
        assert len(frame) == result["folds"][k]["windows"]["test"] * CONFIG.data.horizon
        assert frame[["q0.1", "q0.5", "q0.9"]].notna().all().all()
        assert result["folds"][k]["metrics"]["mean_quantile_loss"] > 0


def test_a_backtests_folds_prepare_once_and_a_rerun_reuses_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """What a fold's data costs (`run_fold`: its purge check, then its train job's data stage)
    with a feature store, without training: each fold's split is its own entry, prepared
    once; a second backtest on the same bars prepares nothing."""
    from foxhunt.backtest.fold_job import check_fold_data, fold_config
    from foxhunt.backtest.folds import cut_folds, parse_embargo
    from foxhunt.data import feature_store
    from foxhunt.data.pipeline import load_frame
    from foxhunt.jobs import prepare as prepare_module
    from foxhunt.jobs.options import JobSetting

    prepared: list[object] = []  # the entries prepared (in memory or a symbol at a time)
    original = feature_store._write

    def counted(root: Path, key: str, config: DataConfig, *args: Any) -> Any:
        prepared.append(config.split)
        return original(root, key, config, *args)

    monkeypatch.setattr(feature_store, "_write", counted)
    # the model's size check builds it (seconds): not what this test is about
    monkeypatch.setattr(prepare_module, "check_step_fits_in_memory", lambda *a, **k: None)
    config = replace(CONFIG, data=replace(DATA, feature_store=str(tmp_path / "store")))
    times = pd.DatetimeIndex(load_frame(DATA)["timestamp"])
    folds = cut_folds(times, folds=2, scheme=BT.scheme, test_size=None,
                      embargo=parse_embargo(BT.embargo), val_fraction=DATA.val_fraction)  # fmt: skip
    caplog.set_level("INFO", logger="foxhunt.data")

    def backtest_data() -> list[int]:
        windows = []
        for k in range(2):
            fold = fold_config(config, folds[k])
            windows.append(check_fold_data(fold, folds, k)["train"])
            run = prepare_module.prepare(fold, JobSetting(output_dir=tmp_path / str(k)))
            assert len(run.data.train) == windows[-1]
        return windows

    first = backtest_data()
    assert len(prepared) == 2 and prepared[0] != prepared[1]  # once a fold: check and train
    assert caplog.text.count("feature store: reusing") == 2
    prepared.clear()
    caplog.clear()
    assert backtest_data() == first
    assert prepared == []  # the rerun reuses every fold's entry
    assert caplog.text.count("feature store: reusing") == 4
