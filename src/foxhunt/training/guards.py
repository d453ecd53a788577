"""Checks that run before a model is built or trained, so that a config which cannot work
is refused with a line that says why, instead of an out-of-memory kill or a silent no-op."""

from __future__ import annotations

from foxhunt.data import PreparedData
from foxhunt.errors import ConfigError
from foxhunt.training.config import TrainingConfig


def check_early_stopping(training: TrainingConfig, data: PreparedData) -> None:
    """Early stopping needs validation windows: without them every val loss is NaN and
    the run would "stop early" on nothing."""
    if training.patience and len(data.validation) == 0:
        raise ConfigError(
            "early stopping (--patience "
            f"{training.patience}) needs validation windows and the validation split has none "
            "(--val-fraction 0 or too short a span); pass --patience 0 to train every epoch, "
            "or a larger --val-fraction"
        )
