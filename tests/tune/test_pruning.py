"""Pruning through the trainer's callback seam: a callback stops training cleanly, and a
worse trial is pruned while the study runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from foxhunt.data import PreparedData
from foxhunt.runs import METRICS_FILE, WEIGHTS_FILE
from foxhunt.tune import TuneConfig, open_study, parse_space, run_study, trial_dir
from foxhunt.tune.objective import FoldPruning
from foxhunt.tune.pruning import PruningCallback
from helpers import fitted, make_trainer, tiny_data, tiny_model, tiny_run, tiny_training


@pytest.fixture(scope="module")
def data() -> PreparedData:
    return tiny_data()


class StopAtFirstEpoch:
    def on_epoch_end(self, trainer: Any, record: dict[str, Any]) -> None:
        trainer.request_stop("enough")


def test_a_callback_stops_training_after_the_epoch(data: PreparedData) -> None:
    training = tiny_training(epochs=3)
    trainer = make_trainer(data, fitted(tiny_model(), data), training, [StopAtFirstEpoch()])
    state = trainer.fit()
    assert state.epoch == 1 and state.stopped_early
    assert [r["epoch"] for r in state.history] == [0]


class FakeTrainer:
    def __init__(self) -> None:
        self.stopped: list[str] = []

    def request_stop(self, reason: str) -> None:
        self.stopped.append(reason)


def test_the_callback_reports_each_epoch_and_stops_a_worse_trial() -> None:
    study = optuna.create_study(pruner=optuna.pruners.MedianPruner(n_startup_trials=1))
    for value in (1.0, 1.2):  # two finished trials, 1.0 and 1.2 at every epoch
        study.add_trial(
            optuna.trial.create_trial(
                value=value, intermediate_values={0: value, 1: value}, params={}, distributions={}
            )
        )
    good, bad = study.ask(), study.ask()
    for trial, loss in ((good, 0.9), (bad, 5.0)):
        callback, trainer = PruningCallback(trial, offset=1), FakeTrainer()
        callback.on_epoch_end(trainer, {"epoch": 0, "train_loss": loss, "val_loss": loss})
        assert trial.study.get_trials()[trial.number].intermediate_values == {1: loss}
        if trial is good:
            assert callback.pruned_at is None and not trainer.stopped
        else:
            assert callback.pruned_at == 1 and len(trainer.stopped) == 1


def test_a_study_prunes_the_clearly_worse_choice(tmp_path: Path) -> None:
    """The untrained "direct" head forecasts far worse than the volatility baseline's; after
    two baseline trials the median pruner stops the direct one after its first epoch."""
    base = tiny_run(training=tiny_training(epochs=2, max_steps_per_epoch=2))
    space = parse_space({"model.output": {"choices": ["baseline", "direct"]}}, base)
    tune = TuneConfig(trials=3, pruner="median", startup_trials=2, keep="all", heartbeat=1)
    study = open_study(tune, tmp_path)
    for output in ("baseline", "baseline", "direct"):
        study.enqueue_trial({"model.output": output})
    study = run_study(base, space, tmp_path, tune)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2 + [TrialState.PRUNED]
    pruned = trials[2]
    assert pruned.params == {"model.output": "direct"} and pruned.user_attrs["pruned_at"] == 0
    # stopped cleanly: a complete run folder that trained one epoch of two
    metrics = json.loads((trial_dir(tmp_path, 2) / METRICS_FILE).read_text())
    assert metrics["training"]["epochs_run"] == 1 and metrics["training"]["stopped_early"]
    assert pruned.user_attrs["config"]["training"]["epochs"] == 2
    assert (trial_dir(tmp_path, 2) / WEIGHTS_FILE).is_file()


def test_a_pruned_fold_is_the_backtests_last() -> None:
    """With --backtest, fold k reports at steps k * epochs + epoch; once a fold was pruned the
    next fold's callbacks are never handed out: the backtest stops between folds."""
    trial = optuna.create_study().ask()
    folds = FoldPruning(trial, epochs=2, extra=())
    first = folds(0)[0]
    second = folds(1)[0]
    assert (first.offset, second.offset) == (0, 2) and folds.pruned_at() is None
    second.pruned_at = 3
    with pytest.raises(FoldPruning.Stop):
        folds(2)
    assert folds.pruned_at() == 3
