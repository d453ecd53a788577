"""Walk-forward backtest: folds with purge and embargo, a train job per fold, every baseline,
the forecast as a trading signal net of costs (docs/backtest.md).

A door-level package: it runs training jobs, so only the CLI and `foxhunt.tune` import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foxhunt.backtest.config import BacktestConfig
from foxhunt.backtest.folds import Fold, cut_folds, leaking_targets
from foxhunt.backtest.signal import CostModel
from foxhunt.backtest.stats import block_bootstrap, deflated_sharpe, max_drawdown, sharpe
from foxhunt.lazy import lazy_exports

if TYPE_CHECKING:
    from foxhunt.backtest.runner import BACKTEST_FILE, run_backtest

__all__ = [
    "BACKTEST_FILE",
    "BacktestConfig",
    "CostModel",
    "Fold",
    "block_bootstrap",
    "cut_folds",
    "deflated_sharpe",
    "leaking_targets",
    "max_drawdown",
    "run_backtest",
    "sharpe",
]

#: the runner (training jobs, torch), imported on first use: the configs alone (the CLI's
#: --help reads them) import no torch
_LAZY = {"BACKTEST_FILE": "foxhunt.backtest.runner", "run_backtest": "foxhunt.backtest.runner"}

__getattr__ = lazy_exports(__name__, _LAZY)
