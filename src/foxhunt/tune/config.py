"""How a study runs: its size, database, pruner, what it keeps, and the objective."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from foxhunt.backtest import BacktestConfig
from foxhunt.errors import ConfigError

Pruner = Literal["median", "hyperband", "none"]
Keep = Literal["best", "all"]


@dataclass(frozen=True, kw_only=True)
class TuneConfig:
    """One worker's view of a study; every worker of a study should be given the same.

    Attributes:
        trials: finished-or-pruned trials the study holds when it is done, counted over every
            worker and every restart (a failed or killed trial does not count; >= 1).
        storage: SQLAlchemy URL of the study's database; None = ``sqlite:///DIR/study.db``
            in the output folder.
        study_name: the study's name in the database (one database may hold several).
        pruner: "median" (a trial whose epoch's validation loss is worse than the median of
            earlier trials at that epoch stops), "hyperband", or "none".
        startup_trials: with the median pruner, finished trials before any is pruned (>= 0).
        keep: "best" deletes every finished trial's folder but the best one's; "all" keeps
            every trial's folder.
        backtest: None = the objective is the run's best validation loss; else the
            walk-forward mean quantile loss of this backtest (folds run in the trial's
            process, one after the other; ``trials`` replaces its ``trials``).
        heartbeat: seconds between a running trial's heartbeats in the database; a trial
            silent for twice that (its process killed) is marked failed (>= 1).
        sampler_seed: seed of the TPE sampler (None = drawn).
    """

    trials: int = 20
    storage: str | None = None
    study_name: str = "foxhunt"
    pruner: Pruner = "median"
    startup_trials: int = 2
    keep: Keep = "best"
    backtest: BacktestConfig | None = None
    heartbeat: int = 60
    sampler_seed: int | None = None

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
