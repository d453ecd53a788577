"""Quantile regression of the next return on realized measures (Koenker and Bassett 1978).

As Zikes and Barunik (2016) on S&P 500 futures: the tau-quantile of the next profile-adjusted
return is linear in volatility measures known at the origin,

    Q_tau(u_{t+1} | x_t) = a_tau + sum_k b_{tau,k} sqrt(RV_k(t)),   k = 1 hour, 1 session, 1 week

(RV_k the mean u² over the last k usable returns, as in the HAR) plus |u_t|, fitted with
`statsmodels.QuantReg` on the train span at a fixed grid of levels `LEVELS` (the model's
levels are not known when the baselines are fitted). A requested level between two fitted ones
is interpolated linearly, one outside the grid takes the nearest; the Q quantiles of a
forecast are sorted (Chernozhukov et al. 2010's rearrangement: crossing lines are no
distribution). The forecast of step h is that of step 1 (the regression is one-step), times the
profile of bar t+h.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from foxhunt.baselines.garch import GarchFitError
from foxhunt.baselines.har import min_rows, trailing_mean
from foxhunt.baselines.residuals import interpolation

LEVELS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99)


@dataclass(frozen=True)
class QuantRegFit:
    lags: tuple[int, ...]  # bars of the realized measures (1 hour, 1 session, 1 week)
    levels: tuple[float, ...]
    coef: tuple[tuple[float, ...], ...]  # [L][1 + 1 + len(lags)]: a, b_|u|, b_k ...

    def state_dict(self) -> dict[str, Any]:
        """Numbers only (baseline.json's check): coefficients keyed by their level."""
        coef = {f"{q:g}": list(row) for q, row in zip(self.levels, self.coef, strict=True)}
        return {"lags": list(self.lags), "coef": coef}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> QuantRegFit:
        rows = {float(q): row for q, row in state["coef"].items()}
        levels = tuple(sorted(rows))
        fit = cls(
            lags=tuple(int(k) for k in state["lags"]),
            levels=levels,
            coef=tuple(tuple(float(b) for b in rows[q]) for q in levels),
        )
        coef = np.asarray(fit.coef, dtype=np.float64)
        if coef.shape != (len(fit.levels), len(fit.lags) + 2) or not np.isfinite(coef).all():
            raise ValueError(f"quantreg state has coefficients of shape {coef.shape}")
        if len(levels) < 2 or not 0 < levels[0] <= levels[-1] < 1 or min(fit.lags) < 1:
            raise ValueError("quantreg needs two or more levels in (0, 1) and lags >= 1")
        return fit


def measures(u: np.ndarray, lags: tuple[int, ...]) -> np.ndarray:
    """[n, 1 + len(lags)] |u_t| and sqrt(RV_k(t)) at each return of `u` [n]."""
    u2 = np.square(u)
    return np.stack([np.abs(u), *(np.sqrt(trailing_mean(u2, k)) for k in lags)], axis=1)


def fit_quantreg(u: np.ndarray, *, lags: tuple[int, ...]) -> QuantRegFit:
    """QuantReg of u_{t+1} on the measures at t, at every level of LEVELS."""
    import statsmodels.api as sm  # heavy import: only when fitting

    origins = np.arange(lags[-1] - 1, len(u) - 1)
    if len(origins) < min_rows(lags):
        raise GarchFitError(
            f"{len(u)} usable train returns; quantile regression needs "
            f"{lags[-1] + min_rows(lags)} (a week to warm up, as many rows to fit)"
        )
    if not np.std(u) > 0:
        raise GarchFitError("train returns are constant")
    x = sm.add_constant(measures(u, lags)[origins], has_constant="add")
    y = u[origins + 1]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' iteration-limit note; checked below
        for q in LEVELS:
            rows.append(tuple(np.asarray(sm.QuantReg(y, x).fit(q=q).params).tolist()))
    if not np.isfinite(rows).all():
        raise GarchFitError("quantile regression has non-finite coefficients")
    return QuantRegFit(lags, LEVELS, tuple(rows))


def quantreg_quantiles(fit: QuantRegFit, u: np.ndarray, quantiles: Sequence[float]) -> np.ndarray:
    """[n, Q] sorted one-step quantiles of the next return from each return of `u` [n]."""
    coef = np.asarray(fit.coef, dtype=np.float64)  # [L, K + 1]
    at_levels = coef[:, 0] + measures(u, fit.lags) @ coef[:, 1:].T  # [n, L]
    return np.sort(at_levels @ interpolation(fit.levels, quantiles), axis=1)
