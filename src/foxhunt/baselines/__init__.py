"""Volatility baselines a desk would compare a return-quantile model with.

Plain numpy on bar returns; nothing here knows about datasets, models or training (the
scoring layer calls in). The intraday profile and the causal RMS are the data layer's
(``data/volatility.py``), the very ones the model's baseline scale uses. See docs/forecasting.md, "Baselines".
"""

from foxhunt.baselines.bars import BASIS_POINTS, BarReturns
from foxhunt.baselines.forecast import (
    NAMES,
    FittedBaselines,
    fit_baselines,
    forecast_baselines,
)
from foxhunt.baselines.garch import GarchFitError, GarchT, fit_garch_t
from foxhunt.data.volatility import minute_of_day

__all__ = [
    "BASIS_POINTS",
    "NAMES",
    "BarReturns",
    "FittedBaselines",
    "GarchFitError",
    "GarchT",
    "fit_baselines",
    "fit_garch_t",
    "forecast_baselines",
    "minute_of_day",
]
