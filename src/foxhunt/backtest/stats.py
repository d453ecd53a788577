"""Statistics of a backtest: the block bootstrap over days, Sharpe, drawdown, deflated Sharpe.

The deflated Sharpe ratio is Bailey and Lopez de Prado (2014), "The Deflated Sharpe Ratio:
Correcting for Selection Bias, Backtest Overfitting and Non-Normality", J. Portfolio Mgmt
40(5): the probabilistic Sharpe ratio (PSR) of the observed, non-annualized Sharpe against
the expected maximum Sharpe of `trials` unskilled strategies whose Sharpe ratios vary by V.
"""

from __future__ import annotations

import math

import numpy as np

# scipy and the scoring layer are imported where used: the cost model (signal.py) needs only
# sharpe and max_drawdown, and `foxhunt backtest --help` imports it

EULER_GAMMA = 0.5772156649015329


def block_bootstrap(
    values: np.ndarray, blocks: np.ndarray, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95% interval of mean(values), resampling whole blocks (days) with replacement: the
    windows of one day move together (their errors share the day's volatility). The one
    implementation is ``foxhunt.task.bootstrap``; NaN for no values."""
    from foxhunt.task.bootstrap import interval

    if len(values) == 0:
        return float("nan"), float("nan")
    return interval(np.asarray(values, dtype=np.float64), np.asarray(blocks), resamples, seed)


def sharpe(returns: np.ndarray, periods_per_year: float = 1.0) -> float:
    """Mean over standard deviation (ddof 1) of per-period returns, times sqrt(periods)."""
    r = np.asarray(returns, dtype=np.float64)
    if len(r) < 2:
        return float("nan")
    sd = float(r.std(ddof=1))
    if sd == 0.0:
        return 0.0
    return float(r.mean() / sd * math.sqrt(periods_per_year))


def max_drawdown(pnl: np.ndarray) -> float:
    """Largest fall of the cumulative PnL from its running peak (>= 0, in PnL units); the
    peak starts at 0 (before the first trade)."""
    equity = np.concatenate([[0.0], np.cumsum(np.asarray(pnl, dtype=np.float64))])
    return float(np.max(np.maximum.accumulate(equity) - equity))


def probabilistic_sharpe(
    sr: float, benchmark: float, observations: int, skewness: float, kurt: float
) -> float:
    """PSR: P(true SR > benchmark) for a non-annualized SR estimated from `observations`
    returns with the given skewness and (non-excess) kurtosis."""
    from scipy.stats import norm

    if observations < 2 or not math.isfinite(sr):
        return float("nan")
    variance = 1.0 - skewness * sr + (kurt - 1.0) / 4.0 * sr**2
    if variance <= 0:
        return float("nan")
    z = (sr - benchmark) * math.sqrt(observations - 1) / math.sqrt(variance)
    return float(norm.cdf(z))


def expected_max_sharpe(trials: int, variance: float) -> float:
    """E[max SR] of `trials` independent zero-skill Sharpe estimates of variance V (eq. of SR0
    in the paper); 0 for a single trial (nothing was selected)."""
    from scipy.stats import norm

    if trials <= 1:
        return 0.0
    quantile_1 = norm.ppf(1.0 - 1.0 / trials)
    quantile_e = norm.ppf(1.0 - 1.0 / (trials * math.e))
    return float(math.sqrt(variance) * ((1 - EULER_GAMMA) * quantile_1 + EULER_GAMMA * quantile_e))


def deflated_sharpe(
    sr: float,
    *,
    trials: int,
    trials_variance: float,
    observations: int,
    skewness: float,
    kurt: float,
) -> dict[str, float]:
    """DSR = PSR(SR0) with SR0 the expected maximum Sharpe of the trials; all non-annualized."""
    benchmark = expected_max_sharpe(trials, trials_variance)
    value = probabilistic_sharpe(sr, benchmark, observations, skewness, kurt)
    return {"value": value, "sr0": benchmark, "trials": trials}


def deflated_sharpe_of(
    returns: np.ndarray, *, trials: int, trial_sharpes: np.ndarray | None = None
) -> dict[str, float]:
    """The DSR of per-bar returns. The variance of the trials' Sharpe ratios is that of
    `trial_sharpes` (non-annualized) when there are several, else the variance of the Sharpe
    estimator under the null, 1 / (T - 1)."""
    from scipy.stats import kurtosis, skew

    r = np.asarray(returns, dtype=np.float64)
    sr = sharpe(r)
    if len(r) < 3 or not math.isfinite(sr) or float(r.std()) == 0.0:
        return {"value": float("nan"), "sr0": float("nan"), "trials": trials, "sharpe": sr}
    finite = None if trial_sharpes is None else trial_sharpes[np.isfinite(trial_sharpes)]
    if finite is not None and len(finite) > 1:
        variance = float(np.var(finite, ddof=1))
    else:
        variance = 1.0 / (len(r) - 1)
    out = deflated_sharpe(
        sr,
        trials=trials,
        trials_variance=variance,
        observations=len(r),
        skewness=float(skew(r)),
        kurt=float(kurtosis(r, fisher=False)),
    )
    return {**out, "sharpe": sr}
