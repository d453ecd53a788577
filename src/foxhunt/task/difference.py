"""Is a difference in loss real? Diebold-Mariano, the model confidence set, coverage tests.

All three read per-window losses or hits in window order (each symbol's windows in time).

- **Diebold-Mariano** (1995) on the loss differential d_t = L_a,t - L_b,t: t = mean(d) / se,
  se from the Newey-West (Bartlett) long-run variance with lag >= H - 1, since windows that
  start one bar apart share H - 1 target bars; the lag is max(H - 1, the Newey-West rule
  floor(4 (T/100)^(2/9))). The variance is statsmodels' HAC of an OLS of d on a constant.
  Harvey, Leybourne and Newbold's (1997) small-sample factor sqrt((T + 1 - 2h + h(h-1)/T) / T)
  with h = H multiplies t, and the p-value (two-sided) is Student-t with T - 1 degrees of
  freedom; with thousands of windows the factor is ~1.
- **Model confidence set** (Hansen, Lunde and Nason 2011) at 90%: ``arch.bootstrap.MCS``
  (range statistic, stationary block bootstrap, seeded). A forecaster is in the set when its
  MCS p-value exceeds 0.10.
- **Coverage per quantile** on the one-step forecasts (step 1 of consecutive windows: later
  steps overlap and their hits are dependent by construction): hit_t = 1{y_t <= q_t}.
  Kupiec's (1995) unconditional test LR_uc of P(hit) = q and Christoffersen's (1998)
  independence test LR_ind of a first-order Markov chain of hits against independence, each
  chi2(1).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

# scipy.special's functions behind scipy.stats' t.sf and chi2.sf (the same numbers, bit for
# bit): scipy.stats takes 1-2 s to import, paid by every process that scores
from scipy.special import chdtrc, stdtr, xlogy

from foxhunt.task.bootstrap import interval

Array = NDArray[np.float64]

#: the MCS keeps a forecaster unless it is rejected at this size (a 90% set)
MCS_SIZE = 0.10
MCS_REPS = 1000

log = logging.getLogger("foxhunt.task")


def hac_lag(num: int, horizon: int) -> int:
    """The Newey-West lag: the larger of H - 1 and floor(4 (T/100)^(2/9))."""
    return max(horizon - 1, math.floor(4.0 * (num / 100.0) ** (2.0 / 9.0)))


def diebold_mariano(diff: Array, horizon: int, *, hln: bool = True) -> dict[str, float]:
    """DM test of mean(diff) = 0 for a loss differential `diff` [T] (NaN rows dropped):
    {"mean", "stat", "pvalue", "lag"}; NaN stat and p-value when it cannot be computed."""
    import statsmodels.api as sm  # heavy import: only when scoring

    d = np.asarray(diff, dtype=np.float64)
    d = d[np.isfinite(d)]
    num = len(d)
    nan = float("nan")
    if num < 3 or not np.std(d) > 0:  # identical forecasts (d == 0) or too few: no test
        return {"mean": float(d.mean()) if num else nan, "stat": nan, "pvalue": nan, "lag": nan}
    lag = hac_lag(num, horizon)
    fit = sm.OLS(d, np.ones(num)).fit(
        cov_type="HAC", cov_kwds={"maxlags": lag, "use_correction": False}
    )
    stat = float(fit.tvalues[0])
    if hln:
        h = horizon
        stat *= math.sqrt(max(num + 1 - 2 * h + h * (h - 1) / num, 0.0) / num)
    pvalue = float(2.0 * stdtr(num - 1, -abs(stat)))  # t.sf(|stat|, num - 1)
    return {"mean": float(d.mean()), "stat": stat, "pvalue": pvalue, "lag": float(lag)}


def model_confidence_set(
    losses: dict[str, Array], *, block_size: int, size: float = MCS_SIZE, seed: int = 0
) -> dict[str, Any]:
    """The MCS over `losses` {name: [T]} (forecasters with any NaN left out):
    {"size", "included": [names], "pvalues": {name: p}, "block_size"}."""
    from arch.bootstrap import MCS  # heavy import: only when scoring

    names = [n for n, v in losses.items() if np.isfinite(v).all()]
    # forecasters with identical losses are one model to the MCS (their zero-variance
    # difference is a 0/0 in its statistic): test one, give the others its p-value
    first: dict[str, str] = {}
    for name in names:
        same = (m for m in dict.fromkeys(first.values()) if np.array_equal(losses[m], losses[name]))
        first[name] = next(same, name)
    distinct = list(dict.fromkeys(first.values()))
    pvalues = {n: 1.0 for n in distinct}
    while len(distinct) > 1:
        frame = pd.DataFrame({n: np.asarray(losses[n], dtype=np.float64) for n in distinct})
        mcs = MCS(
            frame, size, reps=MCS_REPS, block_size=block_size, bootstrap="stationary", seed=seed
        )
        try:
            mcs.compute()
        except (IndexError, ValueError, ZeroDivisionError, FloatingPointError) as exc:
            # arch fails on losses of wildly different scales (a damaged forecaster): the
            # worst by mean loss, which the MCS would eliminate first, leaves with p = 0
            worst = max(distinct, key=lambda n: float(np.mean(losses[n])))
            log.warning("MCS failed (%s); %s left out as the worst (p 0)", exc, worst)
            distinct.remove(worst)
            pvalues[worst] = 0.0
            continue
        pvalues.update({str(n): float(p) for n, p in mcs.pvalues["Pvalue"].items()})
        break
    return {
        "size": size,
        "block_size": block_size,
        "included": [n for n in names if pvalues[first[n]] > size],
        "pvalues": {n: pvalues[first[n]] for n in names},
    }


def kupiec(hits: NDArray[np.bool_], level: float) -> float:
    """p-value of Kupiec's LR test that P(hit) = `level` over `hits` [T]."""
    num, ones = len(hits), int(np.sum(hits))
    if num == 0:
        return float("nan")
    share = ones / num
    null = xlogy(num - ones, 1 - level) + xlogy(ones, level)
    alt = xlogy(num - ones, 1 - share) + xlogy(ones, share)
    return float(chdtrc(1, max(-2.0 * (null - alt), 0.0)))  # chi2(1).sf


def christoffersen(hits: NDArray[np.bool_]) -> float:
    """p-value of Christoffersen's LR test that hits [T] are independent (vs first-order Markov)."""
    h = np.asarray(hits, dtype=bool)
    if len(h) < 2:
        return float("nan")
    prev, cur = h[:-1], h[1:]
    n00, n01 = int(np.sum(~prev & ~cur)), int(np.sum(~prev & cur))
    n10, n11 = int(np.sum(prev & ~cur)), int(np.sum(prev & cur))
    p01 = n01 / max(n00 + n01, 1)
    p11 = n11 / max(n10 + n11, 1)
    p = (n01 + n11) / (len(h) - 1)
    null = xlogy(n00 + n10, 1 - p) + xlogy(n01 + n11, p)
    alt = xlogy(n00, 1 - p01) + xlogy(n01, p01) + xlogy(n10, 1 - p11) + xlogy(n11, p11)
    return float(chdtrc(1, max(-2.0 * (null - alt), 0.0)))  # chi2(1).sf


def coverage_tests(
    pred: Array, target: Array, quantiles: Sequence[float]
) -> dict[str, dict[str, float]]:
    """{level: {"hit_rate", "kupiec_p", "christoffersen_p"}} of the step-1 forecasts of
    `pred` [W, H, Q] against `target` [W, H]."""
    out = {}
    for i, q in enumerate(quantiles):
        hits = target[:, 0] <= pred[:, 0, i]
        out[f"{q:g}"] = {
            "hit_rate": float(np.mean(hits)) if len(hits) else float("nan"),
            "kupiec_p": kupiec(hits, q),
            "christoffersen_p": christoffersen(hits),
        }
    return out


def compare_forecasters(
    losses: dict[str, Array],
    *,
    reference: str,
    horizon: int,
    days: NDArray[np.int64] | None = None,
    resamples: int = 2000,
) -> dict[str, Any]:
    """DM of `reference` against every other forecaster, the paired day-block bootstrap 95%
    interval of the mean differential when `days` [T] labels each window's day, and the MCS
    over all of them; `losses` {name: [T]} are per-window losses in window order."""
    base = losses[reference]
    pairs: dict[str, Any] = {}
    for name, other in losses.items():
        if name == reference:
            continue
        diff = base - other
        pairs[name] = diebold_mariano(diff, horizon)
        if days is not None and np.isfinite(diff).all():
            pairs[name]["ci95"] = list(interval(diff, days, resamples))
    if days is not None and len(days):  # a block about one day of windows
        block = max(horizon, round(len(days) / len(np.unique(days))))
    else:
        block = max(horizon, round(math.sqrt(len(base))))
    return {
        "reference": reference,
        "dm": pairs,
        "mcs": model_confidence_set(losses, block_size=int(block)),
    }
