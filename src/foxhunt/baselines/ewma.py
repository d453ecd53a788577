"""EWMA / RiskMetrics variance with its decay fitted to the bars, not 0.94 per day.

On profile-adjusted returns u (basis points), zero mean:

    sigma²_t = lam sigma²_{t-1} + (1 - lam) u²_{t-1}

`fit_ewma` estimates lam by Gaussian (quasi) maximum likelihood on the train span with
`arch` (``ZeroMean`` + ``EWMAVariance(None)``). RiskMetrics' 0.94 is a *daily* decay: a
half-life of 11 days, ~3000 five-minute bars; fitted on the bars the decay is the one the data
ask for. `filter_ewma` runs the recursion with lam fixed over a whole series, from arch's own
backcast, so on the train span it reproduces arch's conditional variances and beyond it each
variance reads only earlier returns. The h-step variance of an EWMA is flat: v_h = sigma²_{t+1}.
"""

from __future__ import annotations

import warnings

import numpy as np

from foxhunt.baselines.garch import MIN_FIT_BARS, GarchFitError, backcast


def fit_ewma(u: np.ndarray) -> float:
    """The decay lam in (0, 1) of `u` [n]; GarchFitError when it cannot be fitted."""
    from arch.univariate import EWMAVariance, Normal, ZeroMean  # heavy: only when fitting

    if len(u) < MIN_FIT_BARS:
        raise GarchFitError(f"{len(u)} usable train returns; EWMA needs {MIN_FIT_BARS}")
    if not np.std(u) > 0:
        raise GarchFitError("train returns are constant")
    model = ZeroMean(u, volatility=EWMAVariance(None), distribution=Normal(), rescale=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a decay at its bound is reported by the check below
        try:
            lam = float(model.fit(disp="off").params["lam"])
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise GarchFitError(f"arch failed: {exc}") from exc
    if not 0.0 < lam < 1.0:
        raise GarchFitError(f"fitted decay {lam:g} is not in (0, 1)")
    return lam


def filter_ewma(lam: float, u: np.ndarray) -> np.ndarray:
    """[n + 1] sigma² of each return of `u` [n] and, last, of the return after it."""
    from scipy.signal import lfilter  # here, not above: a 1-2 s import for every process

    start = backcast(u)
    drive = (1.0 - lam) * np.concatenate([[start], np.square(u)])
    sigma2, _ = lfilter([1.0], [1.0, -lam], drive, zi=[lam * start])
    return np.asarray(sigma2)
