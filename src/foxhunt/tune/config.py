"""How a study runs: its size, database, pruner, what it keeps, and the objective."""

from __future__ import annotations

from dataclasses import dataclass

from foxhunt.backtest import BacktestConfig
from foxhunt.config_fields import check_ranges
from foxhunt.errors import ConfigError
from foxhunt.tune.settings import StudySettings


@dataclass(frozen=True, kw_only=True)
class TuneConfig(StudySettings):
    """One worker's view of a study; every worker of a study should be given the same.

    Attributes:
        backtest: None = the objective is the run's best validation loss; else the
            walk-forward mean quantile loss of this backtest (folds run in the trial's
            process, one after the other; ``trials`` replaces its ``trials``).
    """

    backtest: BacktestConfig | None = None

    def __post_init__(self) -> None:
        for name, low in (("trials", 1), ("heartbeat", 1), ("startup_trials", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"tune.{name} must be an integer >= {low}, got {value!r}")
        if self.pruner not in ("median", "hyperband", "none"):
            raise ConfigError(f"tune.pruner {self.pruner!r}: use median, hyperband or none")
        if self.keep not in ("best", "all"):
            raise ConfigError(f"tune.keep {self.keep!r}: use best or all")
        if not self.study_name.strip():
            raise ConfigError("tune.study_name must not be empty")
        if self.backtest is not None and self.backtest.jobs != 1:
            raise ConfigError(
                "a tuned backtest runs its folds in the trial's process (--jobs 1); run "
                "several `foxhunt tune` workers instead"
            )
        check_ranges(self, "tune")  # the upper bounds the checks above leave
