"""Empirical quantiles of standardized train residuals, beside the Gaussian and Student-t.

For a volatility baseline with one-step standard deviation s_{t-1} (from origin t-1) of the
adjusted return u_t, the standardized residuals z_t = u_t / s_{t-1} over the train span give
an empirical distribution; its q-quantile replaces the Gaussian (or t) z_q in

    q-quantile of r_{t+h} = sd_h(t) * profile(minute of t+h) * zhat_q

Fitted on the train span only, saved at the fixed levels `GRID` (0.5% apart); a requested
level between two of them is interpolated linearly, one outside [0.005, 0.995] takes the end.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from foxhunt.baselines.garch import MIN_FIT_BARS, GarchFitError

GRID = tuple(round(0.005 * i, 3) for i in range(1, 200))


def interpolation(levels: Sequence[float], quantiles: Sequence[float]) -> np.ndarray:
    """[L, Q] weights W with values_at_levels [.., L] @ W = values at `quantiles`, linear
    between neighbouring levels, the nearest level outside them."""
    grid = np.asarray(levels, dtype=np.float64)
    weights = np.zeros((len(grid), len(quantiles)))
    for i, q in enumerate(quantiles):
        q = float(np.clip(q, grid[0], grid[-1]))
        j = min(int(np.searchsorted(grid, q, side="right")) - 1, len(grid) - 2)
        share = (q - grid[j]) / (grid[j + 1] - grid[j])
        weights[j, i], weights[j + 1, i] = 1.0 - share, share
    return weights


def residual_quantiles(z: np.ndarray) -> tuple[float, ...]:
    """The quantiles at GRID of the finite standardized residuals `z`."""
    z = z[np.isfinite(z)]
    if len(z) < MIN_FIT_BARS:
        raise GarchFitError(f"{len(z)} standardized train residuals; need {MIN_FIT_BARS}")
    return tuple(np.quantile(z, GRID).tolist())


def check_residual_quantiles(values: Sequence[float]) -> None:
    """ValueError unless `values` are finite, non-decreasing quantiles at GRID."""
    v = np.asarray(values, dtype=np.float64)
    if v.shape != (len(GRID),) or not np.isfinite(v).all() or np.any(np.diff(v) < 0):
        raise ValueError(f"residual quantiles must be {len(GRID)} finite, sorted values")
