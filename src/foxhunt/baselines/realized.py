"""Rolling realized volatility of profile-adjusted returns, with Gaussian quantiles.

From origin t (the last bar the forecaster saw), with u = r / profile(minute):

    vol_t = sqrt(mean(u_s², s = t-N+1 .. t))            (zero mean: drift is ~0 at 5 minutes)
    q-quantile of r_{t+h} = vol_t * profile(minute of bar t+h) * z_q,  z_q Gaussian

Gaussian rather than Student-t on purpose: at the 10/50/90% levels a unit-variance t sits
*closer* to zero than the Gaussian (fat tails take the variance), and a rolling window has no
fitted degrees of freedom to pick it with; GARCH-t (garch.py) is the fat-tailed comparison.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_WINDOW = 64


def gaussian_quantiles(
    vol: np.ndarray, target_profile: np.ndarray, quantiles: Sequence[float]
) -> np.ndarray:
    """[W, H, Q] quantiles from the origin's vol [W] and the target bars' profile [W, H]."""
    from scipy.stats import norm  # where used: importing the baselines needs no scipy

    z = norm.ppf(np.asarray(quantiles, dtype=np.float64))
    return (vol[:, None] * target_profile)[..., None] * z
