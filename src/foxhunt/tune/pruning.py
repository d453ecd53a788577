"""Per-epoch reports to the trial, and the pruner's verdict acted on through the trainer's
callback seam (training/callbacks.py): a pruned trial's job stops after the epoch, cleanly."""

from __future__ import annotations

import math
from typing import Any

import optuna

from foxhunt.tune.config import TuneConfig


def make_pruner(tune: TuneConfig) -> optuna.pruners.BasePruner:
    if tune.pruner == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=tune.startup_trials)
    if tune.pruner == "hyperband":  # its budget: the epochs a trial reports (steps, with folds)
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource="auto")
    return optuna.pruners.NopPruner()


class PruningCallback:
    """Reports each epoch's validation loss as the trial's step ``offset + epoch`` (a
    backtest's fold k starts at k * epochs); when the pruner says so, the trainer stops after
    that epoch and the job finishes as after an early stop. ``pruned_at`` is then the step."""

    def __init__(self, trial: optuna.Trial, offset: int = 0) -> None:
        self.trial = trial
        self.offset = offset
        self.pruned_at: int | None = None

    def on_epoch_end(self, trainer: Any, record: dict[str, Any]) -> None:
        step = self.offset + int(record["epoch"])
        value = float(record["val_loss"])
        if not math.isfinite(value):
            return  # the job fails on it by itself (training/finite.py)
        self.trial.report(value, step)
        if self.pruned_at is None and self.trial.should_prune():
            self.pruned_at = step
            trainer.request_stop(f"trial {self.trial.number} pruned (val {value:.4f})")
