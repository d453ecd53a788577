"""Every fitted baseline run forward over one symbol's rows with its parameters fixed.

A forecast from row t (the origin) reads returns up to t only: rolling vol is a trailing
window, GARCH and EWMA are recursions, HAR and quantile-regression terms are trailing means.
The recursive filters run over the symbol's usable returns only (gaps skipped) and are read
back at each row through `seen`, the count of usable returns up to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from foxhunt.baselines.bars import BarReturns
from foxhunt.baselines.ewma import filter_ewma
from foxhunt.baselines.fitted import FittedBaselines
from foxhunt.baselines.garch import GarchT, filter_variance, variance_paths
from foxhunt.baselines.har import Har, har_variance
from foxhunt.baselines.quantreg import QuantRegFit, quantreg_quantiles
from foxhunt.data.volatility import IntradayProfile, causal_rms, minute_of_day

PARKINSON = 1.0 / (4.0 * np.log(2.0))  # E[log(high/low)²] = 4 ln 2 sigma² for a Brownian bar


@dataclass(frozen=True)
class SymbolRows:
    """One symbol's rows as the baselines read them."""

    u: np.ndarray  # [n] profile-adjusted returns (bp), NaN where unusable
    usable: np.ndarray  # [n] bool
    scale: np.ndarray  # [n] the profile at each row
    #: [n] adjusted Parkinson variance (bp²; u² where a bar has no range), None: no high/low
    parkinson: np.ndarray | None

    @property
    def seen(self) -> np.ndarray:
        """[n] usable returns up to and including each row."""
        return np.cumsum(self.usable)

    def at_last(self, values: np.ndarray) -> np.ndarray:
        """[n, ...] of values [n_usable, ...] computed at each usable return, read at the last
        usable return up to each row (NaN before the first)."""
        pad = np.full((1, *values.shape[1:]), np.nan)
        return np.concatenate([pad, values])[self.seen]


def symbol_rows(bars: BarReturns, rows: slice, profile: IntradayProfile) -> SymbolRows:
    scale = profile(minute_of_day(bars.times[rows]))
    usable = bars.usable[rows]
    u = np.where(usable, bars.returns_bp[rows] / scale, np.nan)
    parkinson = None
    if bars.range_bp is not None:
        pk = np.square(bars.range_bp[rows] / scale) * PARKINSON
        parkinson = np.where(np.isfinite(pk), pk, np.square(u))
    return SymbolRows(u=u, usable=usable, scale=scale, parkinson=parkinson)


def next_sd(fitted: FittedBaselines, code: int, s: SymbolRows) -> dict[str, np.ndarray]:
    """{volatility baseline: [n] sd of the next usable return from each row as origin}
    (adjusted bp; NaN where the baseline has no fit for the symbol)."""
    n, nan = len(s.u), np.full(len(s.u), np.nan)
    out = {"realized_vol": causal_rms(s.u, fitted.window, np.arange(n) == 0)}
    uc = s.u[s.usable]
    pc = s.parkinson[s.usable] if s.parkinson is not None else None
    garch, lam = fitted.garch.get(code), fitted.ewma.get(code)
    out["garch_t"] = (
        np.sqrt(filter_variance(garch, uc)[s.seen])
        if isinstance(garch, GarchT) and len(uc)
        else nan
    )
    out["ewma"] = (
        np.sqrt(filter_ewma(lam, uc)[s.seen]) if isinstance(lam, float) and len(uc) else nan
    )
    for name, fits in (("har", fitted.har), ("har_range", fitted.har_range)):
        har = fits.get(code)
        out[name] = np.sqrt(s.at_last(har_variance(har, uc, pc))) if isinstance(har, Har) else nan
    return out


def sd_paths(
    fitted: FittedBaselines, code: int, sd: dict[str, np.ndarray], horizon: int
) -> dict[str, np.ndarray]:
    """{volatility baseline: [n, H] sd of steps 1..H}: GARCH reverts, the others are flat."""
    out = {name: np.repeat(v[:, None], horizon, axis=1) for name, v in sd.items()}
    garch = fitted.garch.get(code)
    if isinstance(garch, GarchT):
        out["garch_t"] = np.sqrt(variance_paths(garch, np.square(sd["garch_t"]), horizon))
    return out


def quantreg_rows(
    fitted: FittedBaselines, code: int, s: SymbolRows, quantiles: Sequence[float]
) -> np.ndarray:
    """[n, Q] one-step quantiles (adjusted bp) from each row as origin; NaN without a fit."""
    fit = fitted.quantreg.get(code)
    if not isinstance(fit, QuantRegFit):
        return np.full((len(s.u), len(quantiles)), np.nan)
    return s.at_last(quantreg_quantiles(fit, s.u[s.usable], quantiles))


def standardized(u: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """[n] z_t = u_t / sd_{t-1} (the one-step forecast from the row before); NaN at row 0."""
    z = np.full(len(u), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        z[1:] = u[1:] / sd[:-1]
    return z
