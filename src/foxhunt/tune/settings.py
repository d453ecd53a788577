"""How a study runs, whatever its objective: `TuneConfig` (config.py) and `foxhunt tune`'s
study section (cli/tune.py) both extend this one definition. Imports no Optuna, torch or
pandas (`foxhunt --help` lists the tune command from it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from foxhunt.config_fields import SEED, Range, setting

Pruner = Literal["median", "hyperband", "none"]
Keep = Literal["best", "all"]


@dataclass(frozen=True, kw_only=True)
class StudySettings:
    """How a study runs, whatever its objective (`foxhunt tune`'s study section extends it).

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
        heartbeat: seconds between a running trial's heartbeats in the database; a trial
            silent for twice that (its process killed) is marked failed (>= 1).
        sampler_seed: seed of the TPE sampler (None = drawn).
    """

    trials: int = 20
    storage: str | None = None
    study_name: str = "foxhunt"
    pruner: Pruner = "median"
    startup_trials: int = setting(2, range=Range(0))
    keep: Keep = "best"
    heartbeat: int = setting(60, range=Range(1, 86_400))
    sampler_seed: int | None = setting(None, range=SEED)
