"""GARCH(1,1) with standardized Student-t innovations, fitted with `arch`, filtered by hand.

On profile-adjusted returns u (basis points), zero mean:

    sigma²_t = omega + alpha u²_{t-1} + beta sigma²_{t-1},   u_t = sigma_t e_t,  e_t ~ t_nu / sd

`fit_garch_t` estimates (omega, alpha, beta, nu) on the train span only. `filter_variance`
runs the recursion over a whole series with those parameters fixed, started from arch's own
backcast, so on the train span it reproduces arch's conditional variances, and beyond it each
variance uses only earlier returns. From origin t the h-step variances follow

    v_1 = sigma²_{t+1},   v_h = omega + (alpha + beta) v_{h-1}

(toward omega / (1 - alpha - beta) when that exists; the recursion needs no stationarity).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

# scipy is imported where used: the run folder imports this module, and `foxhunt predict`
# (which fits and filters nothing) should not wait for scipy.signal

log = logging.getLogger("foxhunt.baselines")

#: arch's backcast: weights 0.94^i over the first 75 squared returns.
BACKCAST_BARS, BACKCAST_DECAY = 75, 0.94
#: Fewer usable train returns than this and no GARCH is fitted.
MIN_FIT_BARS = 100


class GarchFitError(RuntimeError):
    """GARCH could not be fitted (too few bars, constant prices, optimizer failure)."""


@dataclass(frozen=True)
class GarchT:
    omega: float
    alpha: float
    beta: float
    nu: float

    @property
    def persistence(self) -> float:
        return self.alpha + self.beta

    def problem(self) -> str | None:
        """Why these parameters make no usable forecast (None: they do): the variance must
        stay positive and finite (omega > 0, alpha, beta >= 0, alpha + beta < 1) and the
        unit-variance t needs nu > 2."""
        values = asdict(self)
        if not all(np.isfinite(v) for v in values.values()):
            return f"non-finite parameters {values}"
        if self.omega <= 0 or self.alpha < 0 or self.beta < 0:
            return f"omega must be > 0 and alpha, beta >= 0, got {values}"
        if self.persistence >= 1:
            return f"alpha + beta = {self.persistence:g} >= 1: the variance does not revert"
        if self.nu <= 2:
            return f"nu = {self.nu:g} <= 2: the t distribution has no variance"
        if self.omega / (1 - self.persistence) > 1e8:  # bp²: a 100% standard deviation per bar
            return f"unconditional variance {self.omega / (1 - self.persistence):g} bp² is not finite in practice"
        return None

    def state_dict(self) -> dict[str, float]:
        return asdict(self)


def fit_garch_t(u: np.ndarray) -> GarchT:
    """Maximum likelihood GARCH(1,1)-t of `u` [n] (finite, in a scale near 1..1000)."""
    from arch import arch_model  # heavy import: only when a baseline is fitted

    if len(u) < MIN_FIT_BARS:
        raise GarchFitError(f"{len(u)} usable train returns; GARCH needs {MIN_FIT_BARS}")
    if not np.std(u) > 0:
        raise GarchFitError("train returns are constant")
    model = arch_model(u, mean="Zero", vol="GARCH", p=1, q=1, dist="t", rescale=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = model.fit(disp="off")
        except (ValueError, np.linalg.LinAlgError) as exc:
            raise GarchFitError(f"arch failed: {exc}") from exc
    for w in caught:
        log.warning("GARCH fit: %s", w.message)
    p = result.params
    params = GarchT(float(p["omega"]), float(p["alpha[1]"]), float(p["beta[1]"]), float(p["nu"]))
    if (problem := params.problem()) is not None:
        raise GarchFitError(problem)
    return params


def backcast(u: np.ndarray) -> float:
    """arch's starting value for sigma² (and u²) before the first return."""
    head = u[:BACKCAST_BARS]
    w = BACKCAST_DECAY ** np.arange(len(head))
    return float(np.sum(np.square(head) * w / w.sum()))


def filter_variance(params: GarchT, u: np.ndarray) -> np.ndarray:
    """[n + 1] sigma² of each return of `u` [n] and, last, of the return after it."""
    from scipy.signal import lfilter

    start = backcast(u)
    lagged = np.concatenate([[start], np.square(u)])  # u²_{t-1} for t = 0 .. n
    drive = params.omega + params.alpha * lagged
    # sigma²_t - beta sigma²_{t-1} = drive_t, with sigma²_{-1} = backcast
    sigma2, _ = lfilter([1.0], [1.0, -params.beta], drive, zi=[params.beta * start])
    return np.asarray(sigma2)


def variance_paths(params: GarchT, next_variance: np.ndarray, horizon: int) -> np.ndarray:
    """[n, H] variances of steps 1..H ahead, from each origin's next variance [n]."""
    paths = np.empty((len(next_variance), horizon))
    paths[:, 0] = next_variance
    for h in range(1, horizon):
        paths[:, h] = params.omega + params.persistence * paths[:, h - 1]
    return paths


def t_quantiles(nu: float, quantiles: Sequence[float]) -> np.ndarray:
    """[Q] quantiles of the unit-variance Student-t with `nu` degrees of freedom."""
    from scipy.stats import t as student_t

    return np.asarray(student_t.ppf(np.asarray(quantiles), nu) * np.sqrt((nu - 2.0) / nu))
