"""Intraday HAR (Corsi 2009) on profile-adjusted realized variance, in logs; a range variant.

On profile-adjusted returns u (basis points), with RV_k(t) = mean(u²_s, s = t-k+1 .. t) over
the last k usable returns and lags k = 1 bar, 1 hour, 1 session, 1 week (5 sessions) of bars:

    log(RV_T(t+T) + c) = b_0 + sum_k b_k log(RV_k(t) + c) [+ sum_k g_k log(PK_k(t) + c)] + e_t

the target being the mean u² over the next T bars (T = 1 hour), c a floor (1% of the train
mean u²: a bar with no price change has u² = 0). The range variant (`har_range`) adds the
same means of the Parkinson variance PK = (log(high/low) in bp)² / (4 ln 2) / profile².
Coefficients by OLS (`statsmodels`) on the train span; the forecast variance of each of the
next bars is exp(b'x_t) * mean(exp(e)) over train, Duan's (1983) smearing for the bias of
exponentiating a mean of logs. Terms are means over the last k *usable* returns (gaps skipped).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from foxhunt.baselines.garch import GarchFitError

#: the floor inside every log, as a share of the train mean u²
FLOOR_SHARE = 0.01
#: fewer regression rows than this (after a week of warm-up) and no HAR is fitted
MIN_ROWS = 200


def min_rows(lags: tuple[int, ...]) -> int:
    """Regression rows a HAR or quantile regression with `lags` needs after its warm-up: at
    least MIN_ROWS and the longest lag (a week). Over fewer the week-long term barely moves,
    its coefficient is not identified, and the forecasts exploded out of sample (1e10 bp
    and beyond from 10 days of 1-minute bars, issue 42)."""
    return max(MIN_ROWS, lags[-1])


@dataclass(frozen=True)
class Har:
    lags: tuple[int, ...]  # bars in each term: 1 bar, 1 hour, 1 session, 1 week
    target: int  # bars averaged in the target (1 hour)
    floor: float  # bp², added inside every log
    coef: tuple[float, ...]  # b_0, then one per regressor (the range terms last)
    smear: float  # mean exp(residual) over the train rows
    use_range: bool = False

    def state_dict(self) -> dict[str, Any]:
        """Numbers only (baseline.json's check): the range terms show in the count of coef."""
        state = {**asdict(self), "lags": list(self.lags), "coef": list(self.coef)}
        del state["use_range"]
        return state

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Har:
        lags = tuple(int(k) for k in state["lags"])
        coef = tuple(float(b) for b in state["coef"])
        if len(coef) not in (len(lags) + 1, 2 * len(lags) + 1) or min(lags) < 1:
            raise ValueError(f"HAR state {state} is inconsistent")
        har = cls(
            lags=lags,
            target=int(state["target"]),
            floor=float(state["floor"]),
            coef=coef,
            smear=float(state["smear"]),
            use_range=len(coef) == 2 * len(lags) + 1,
        )
        if har.target < 1:
            raise ValueError(f"HAR state {state} is inconsistent")
        if not (np.isfinite(har.coef).all() and har.floor > 0 and har.smear > 0):
            raise ValueError(f"HAR state {state} has non-finite or non-positive values")
        return har


def trailing_mean(x: np.ndarray, k: int) -> np.ndarray:
    """[n] mean of x[i-k+1 .. i] (of what there is, at the start)."""
    total = np.concatenate([[0.0], np.cumsum(x)])
    end = np.arange(1, len(x) + 1)
    start = np.maximum(end - k, 0)
    return (total[end] - total[start]) / (end - start)


def regressors(
    u: np.ndarray, parkinson: np.ndarray | None, lags: tuple[int, ...], floor: float
) -> np.ndarray:
    """[n, K] the HAR's log terms at each return of `u` [n] (and of `parkinson` [n])."""
    series = [np.square(u)] if parkinson is None else [np.square(u), parkinson]
    return np.stack([np.log(trailing_mean(x, k) + floor) for x in series for k in lags], axis=1)


def fit_har(
    u: np.ndarray, parkinson: np.ndarray | None, *, lags: tuple[int, ...], target: int
) -> Har:
    """OLS of the HAR on the train returns `u` [n] (and their Parkinson variances)."""
    import statsmodels.api as sm  # heavy import: only when fitting

    rows, needed = len(u) - lags[-1] - target + 1, min_rows(lags)
    if rows < needed:
        raise GarchFitError(
            f"{len(u)} usable train returns; HAR needs {lags[-1] + target + needed - 1} "
            f"(a week of {lags[-1]} bars to warm up and {needed} to fit)"
        )
    if not np.std(u) > 0:
        raise GarchFitError("train returns are constant")
    floor = FLOOR_SHARE * float(np.mean(np.square(u)))
    x, y = har_rows(u, parkinson, lags=lags, target=target, floor=floor)
    fit = sm.OLS(y, sm.add_constant(x, has_constant="add")).fit()
    coef = np.asarray(fit.params, dtype=np.float64)
    smear = float(np.mean(np.exp(fit.resid)))
    if not (np.isfinite(coef).all() and np.isfinite(smear)):
        raise GarchFitError("HAR regression has non-finite coefficients")
    return Har(lags, target, floor, tuple(coef.tolist()), smear, parkinson is not None)


def har_rows(
    u: np.ndarray, parkinson: np.ndarray | None, *, lags: tuple[int, ...], target: int, floor: float
) -> tuple[np.ndarray, np.ndarray]:
    """The regression: x [rows, K] at origins with a full week behind them and `target`
    returns ahead, and y [rows] the log mean u² over those returns."""
    x = regressors(u, parkinson, lags, floor)
    ahead = np.log(trailing_mean(np.square(u), target) + floor)  # ending at each return
    origins = np.arange(lags[-1] - 1, len(u) - target)
    return x[origins], ahead[origins + target]


def har_variance(har: Har, u: np.ndarray, parkinson: np.ndarray | None) -> np.ndarray:
    """[n] forecast variance of each of the next returns from each return of `u` [n] as
    origin; NaN without the range a range HAR needs."""
    if har.use_range and parkinson is None:
        return np.full(len(u), np.nan)
    x = regressors(u, parkinson if har.use_range else None, har.lags, har.floor)
    coef = np.asarray(har.coef)
    return np.exp(coef[0] + x @ coef[1:]) * har.smear
