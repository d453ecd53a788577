"""A planted-signal market: OHLCV bars whose volatility has known drivers, and its oracle.

`PlantedConfig` (config.py) sizes each driver; `generate_planted` (generate.py) writes the
bars and the latent state behind them; `oracle_quantiles` (oracle.py) forecasts any bar's
next returns with the generator's own conditional quantiles, from what the bars show (the
bound a model can reach) or from the latent state (the floor). One step function
(dynamics.py) drives both, so the oracle is the generator's law by construction.
docs/forecasting.md, "Planted markets".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foxhunt.data.planted.config import PlantedConfig, builtin_market
from foxhunt.lazy import lazy_exports

if TYPE_CHECKING:
    from foxhunt.data.planted.files import planted_config_of, write_planted
    from foxhunt.data.planted.generate import PlantedBars, generate_planted
    from foxhunt.data.planted.oracle import OracleForecast, oracle_quantiles

__all__ = [
    "OracleForecast",
    "PlantedBars",
    "PlantedConfig",
    "builtin_market",
    "generate_planted",
    "oracle_quantiles",
    "planted_config_of",
    "write_planted",
]

#: imported on first use: the config alone (the CLI's --help) needs no pandas or scipy
_LAZY = {
    "planted_config_of": "foxhunt.data.planted.files",
    "write_planted": "foxhunt.data.planted.files",
    "PlantedBars": "foxhunt.data.planted.generate",
    "generate_planted": "foxhunt.data.planted.generate",
    "OracleForecast": "foxhunt.data.planted.oracle",
    "oracle_quantiles": "foxhunt.data.planted.oracle",
}

__getattr__ = lazy_exports(__name__, _LAZY)
