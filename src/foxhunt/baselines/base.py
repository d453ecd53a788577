"""A fitted volatility baseline as the model's base (`DataConfig.base`).

The model's scale is base_volatility[t] * profile[t+h] (``data/volatility.py``). Here the
rolling RMS gives way to one of the fitted baselines: EWMA, HAR or GARCH-t, fitted on the
training span (baseline.json) and run forward with its parameters fixed (``filters.py``), its
standard deviation of the next return from each row (profile-adjusted, so the profile still
shapes the horizon) read only from returns up to the row. Its quantiles are then Gaussian and
flat in the horizon, as the rolling base's: GARCH-t's own table row (Student-t quantiles, a
variance reverting over the horizon) is a different forecaster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from foxhunt.baselines.bars import BASIS_POINTS
from foxhunt.baselines.filters import SymbolRows, next_sd
from foxhunt.baselines.fitted import FittedBaselines
from foxhunt.baselines.garch import BACKCAST_BARS

#: what `DataConfig.base` "auto" chooses among, the rolling RMS first (a tie keeps it)
CANDIDATES = ("realized_vol", "ewma", "har", "garch_t")
#: the bases that are a fitted filter (the rolling one is the data layer's own)
FILTERED = CANDIDATES[1:]

_FITS = {"ewma": "ewma", "har": "har", "garch_t": "garch"}  # FittedBaselines' field
#: the recursions that start from a backcast of the series' first returns
_BACKCAST = ("ewma", "garch_t")


@dataclass(frozen=True)
class FilteredBase:
    """`data.volatility.BaseVolatility` of a fitted baseline: called with profile-adjusted
    log returns [N] and symbol codes [N], it returns the sd of each row's next return [N]."""

    name: str
    fitted: FittedBaselines

    def __post_init__(self) -> None:
        if self.name not in FILTERED:
            raise ValueError(f"base {self.name!r} is not one of {FILTERED}")

    def __call__(self, adjusted: np.ndarray, codes: np.ndarray) -> np.ndarray:
        out = np.full(len(adjusted), np.nan)
        u = np.asarray(adjusted, dtype=np.float64) * BASIS_POINTS  # the units it was fitted in
        for code in np.unique(codes):
            mine = codes == code  # the symbol's rows, in time order
            out[mine] = self._symbol(int(code), u[mine])
        return out / BASIS_POINTS

    def _symbol(self, code: int, u: np.ndarray) -> np.ndarray:
        """[n] one symbol's sd (bp) of the next return from each row."""
        sd = self._filtered(code, u)
        if self.name in _BACKCAST:
            # the recursion starts from a backcast of the first BACKCAST_BARS returns: a row
            # before the last of them gets the filter run on the rows up to it alone, so no
            # value reads a later return (later rows are the whole run's, unchanged)
            early = np.flatnonzero(np.cumsum(np.isfinite(u)) < BACKCAST_BARS)
            for row in early:
                sd[row] = self._filtered(code, u[: row + 1])[row]
        return sd

    def _filtered(self, code: int, u: np.ndarray) -> np.ndarray:
        usable = np.isfinite(u)
        rows = SymbolRows(u=u, usable=usable, scale=np.ones(len(u)), parkinson=None)
        return next_sd(self.fitted, code, rows)[self.name]

    def unfitted(self, codes: np.ndarray, names: Sequence[str] = ()) -> str | None:
        """Why the base has no fit for one of the symbols `codes`; None: it has all.
        `names`: the symbols by code, to name one (else its code)."""
        fits = getattr(self.fitted, _FITS[self.name])
        for code in np.unique(codes):
            fit = fits.get(int(code), "not fitted")
            if isinstance(fit, str):
                which = f"{names[code]!r}" if code < len(names) else f"code {int(code)}"
                return f"{self.name} could not be fitted for symbol {which}: {fit}"
        return None
