"""`foxhunt tune --backtest`: each trial is a walk-forward backtest, the value its mean
quantile loss over the folds' test windows, and the study's size is the backtest's trial
count for the deflated Sharpe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from optuna.trial import TrialState

from foxhunt.cli import main
from foxhunt.tune import TuneConfig, open_study, trial_dir


@pytest.mark.slow  # two backtests of two folds each
def test_the_objective_is_the_walk_forward_loss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "space.yaml").write_text("training.lr: {low: 1e-4, high: 1e-2, log: true}\n")
    args = [
        "tune",
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
    args += ["--variable-hidden-size", "4", "--attention-heads", "2", "--patience", "0"]
    args += ["--epochs", "1", "--max-steps-per-epoch", "1", "--device", "cpu"]
    args += ["--backtest", "--folds", "2", "--test-size", "1d", "--resamples", "50"]
    args += ["--trials", "2", "--keep", "all", "--pruner", "none", "--heartbeat", "1"]
    args += ["--space", str(tmp_path / "space.yaml"), "--output-dir", str(tmp_path / "s")]
    assert main(args) == 0
    assert "deflated Sharpe: backtests of this study count 2 trials" in capsys.readouterr().out
    study = open_study(TuneConfig(), tmp_path / "s")
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    for trial in trials:
        folder = trial_dir(tmp_path / "s", trial.number)
        result = json.loads((folder / "backtest.json").read_text())
        assert trial.value == result["summary"]["mean_quantile_loss"]["mean"]
        assert result["config"]["trials"] == 2  # the deflated Sharpe counts the study
        assert len(result["folds"]) == 2
        # each fold reported its epoch: steps 0 and 1 (fold k starts at k * epochs)
        assert sorted(trial.intermediate_values) == [0, 1]
