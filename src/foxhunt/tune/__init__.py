"""Hyperparameter search (`foxhunt tune`, docs/tuning.md): an Optuna study over any config
field, in a database that survives a killed worker and is shared by several, each trial a
train job (or a backtest) whose epochs feed the pruner.

A door-level package: it runs jobs and backtests, so only the CLI imports it. Needs Optuna
(``pip install 'foxhunt[tune]'``). The study's settings (``settings.py``) import neither Optuna
nor torch nor pandas (``foxhunt --help`` reads them); the rest is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foxhunt.lazy import lazy_exports
from foxhunt.tune.settings import StudySettings

if TYPE_CHECKING:
    from foxhunt.tune.config import TuneConfig
    from foxhunt.tune.objective import trial_dir
    from foxhunt.tune.report import BEST_FILE, best_of
    from foxhunt.tune.space import Param, apply, parse_space, read_space
    from foxhunt.tune.study import open_study, run_study, storage_url

__all__ = [
    "BEST_FILE",
    "Param",
    "StudySettings",
    "TuneConfig",
    "apply",
    "best_of",
    "open_study",
    "parse_space",
    "read_space",
    "run_study",
    "storage_url",
    "trial_dir",
]

_LAZY = {
    "TuneConfig": "foxhunt.tune.config",
    "trial_dir": "foxhunt.tune.objective",
    "BEST_FILE": "foxhunt.tune.report",
    "best_of": "foxhunt.tune.report",
    **dict.fromkeys(("Param", "apply", "parse_space", "read_space"), "foxhunt.tune.space"),
    **dict.fromkeys(("open_study", "run_study", "storage_url"), "foxhunt.tune.study"),
}

__getattr__ = lazy_exports(__name__, _LAZY)
