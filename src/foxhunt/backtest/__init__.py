"""Walk-forward backtest: folds with purge and embargo, a train job per fold, every baseline,
the forecast as a trading signal net of costs (docs/backtest.md).

A door-level package: it runs training jobs, so only the CLI and `foxhunt.tune` import it.
"""

from foxhunt.backtest.folds import Fold, cut_folds, leaking_targets
from foxhunt.backtest.runner import BACKTEST_FILE, BacktestConfig, run_backtest
from foxhunt.backtest.signal import CostModel
from foxhunt.backtest.stats import block_bootstrap, deflated_sharpe, max_drawdown, sharpe

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
