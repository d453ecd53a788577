"""One trial: its parameters applied to the base config, a train job (or a backtest) in the
trial's folder, and the value the study minimizes."""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from foxhunt.backtest import run_backtest
from foxhunt.errors import FoxhuntError
from foxhunt.jobs.train import JobOptions, train
from foxhunt.runs import RunConfig, read_run_config
from foxhunt.tune.config import TuneConfig
from foxhunt.tune.pruning import PruningCallback
from foxhunt.tune.space import Param, apply, suggest

log = logging.getLogger("foxhunt.tune")

#: states that count towards ``--trials``, and those that hold a place while they run
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)
COUNTED = (*FINISHED, TrialState.RUNNING)

#: more training callbacks for a trial (a tracker; the tests' blocking callback)
TrialCallbacks = Callable[[optuna.Trial], tuple[Any, ...]]


class Surplus(Exception):
    """Another worker took the study's last place first: this trial is failed, not run."""


def trial_dir(output_dir: Path, number: int) -> Path:
    return output_dir / f"trial-{number:04d}"


class Objective:
    """Called by ``study.optimize`` once per trial; returns the value to minimize."""

    def __init__(
        self,
        base: RunConfig,
        space: tuple[Param, ...],
        output_dir: Path,
        tune: TuneConfig,
        extra_callbacks: TrialCallbacks | None = None,
    ) -> None:
        self.base, self.space, self.output_dir, self.tune = base, space, output_dir, tune
        self.extra_callbacks = extra_callbacks

    def __call__(self, trial: optuna.Trial) -> float:
        self.claim(trial)
        try:
            config = apply(self.base, suggest(trial, self.space))
        except FoxhuntError as exc:  # a combination the config refuses: say which and why
            trial.set_user_attr("error", " ".join(str(exc).split())[:300])
            raise
        folder = trial_dir(self.output_dir, trial.number)
        if folder.exists():  # a study started again from scratch in the same folder
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        trial.set_user_attr("folder", folder.name)
        extra = self.extra_callbacks(trial) if self.extra_callbacks else ()
        run = self.train if self.tune.backtest is None else self.backtest
        try:
            value, fitted, pruned_at = run(trial, config, folder, extra)
        except FoxhuntError as exc:  # a bad combination, diverged training: this trial fails
            trial.set_user_attr("error", " ".join(str(exc).split())[:300])
            raise
        # with the inputs the data gave the model, as the run's config.json holds them
        trial.set_user_attr("config", fitted.to_dict())
        if pruned_at is not None:
            trial.set_user_attr("pruned_at", pruned_at)
            raise optuna.TrialPruned(f"pruned at step {pruned_at}")
        return value

    def claim(self, trial: optuna.Trial) -> None:
        """Trials are numbered in the order they start: this one runs only if fewer than
        ``trials`` trials before it finished or are running, so workers that start together
        never run more than the study needs."""
        ahead = trial.study.get_trials(deepcopy=False, states=COUNTED)
        if sum(t.number < trial.number for t in ahead) >= self.tune.trials:
            trial.set_user_attr("surplus", True)
            raise Surplus(f"the study already has {self.tune.trials} trials")

    def train(
        self, trial: optuna.Trial, config: RunConfig, folder: Path, extra: tuple[Any, ...]
    ) -> tuple[float, RunConfig, int | None]:
        pruning = PruningCallback(trial)
        result = train(config, folder, options=JobOptions(callbacks=(pruning, *extra)))
        assert result.model_config is not None  # the main rank's result
        value = float(result.metrics["training"]["best_val_loss"])
        return value, replace(config, model=result.model_config), pruning.pruned_at

    def backtest(
        self, trial: optuna.Trial, config: RunConfig, folder: Path, extra: tuple[Any, ...]
    ) -> tuple[float, RunConfig, int | None]:
        """The walk-forward loss; a pruned fold stops its training and no later fold runs."""
        assert self.tune.backtest is not None
        bt = replace(self.tune.backtest, trials=self.tune.trials)
        folds = FoldPruning(trial, config.training.epochs, extra)
        try:
            result = run_backtest(config, folder, bt, callbacks=folds)
            value = result["summary"]["mean_quantile_loss"]["mean"]
            trial.set_user_attr("deflated_sharpe", result["summary"]["deflated_sharpe"]["value"])
        except FoldPruning.Stop:  # between folds: the pruned fold is complete, none after it
            value = None
        fitted = read_run_config(folder / "folds" / "0" / "run")
        loss = math.nan if value is None else float(value)
        return loss, replace(config, model=fitted.model), folds.pruned_at()


class FoldPruning:
    """The backtest's callbacks for fold k: the trial's pruning callback at step k * epochs,
    and, once a fold was pruned, a stop before the next fold begins."""

    class Stop(Exception):
        pass

    def __init__(self, trial: optuna.Trial, epochs: int, extra: tuple[Any, ...]) -> None:
        self.trial, self.epochs, self.extra = trial, epochs, extra
        self.made: list[PruningCallback] = []

    def pruned_at(self) -> int | None:
        return next((c.pruned_at for c in self.made if c.pruned_at is not None), None)

    def __call__(self, k: int) -> tuple[Any, ...]:
        if self.pruned_at() is not None:
            raise FoldPruning.Stop
        callback = PruningCallback(self.trial, offset=k * self.epochs)
        self.made.append(callback)
        return (callback, *self.extra)
