"""Fit the baselines on the train span, then forecast from any window origins.

`fit_baselines` fits, per symbol, on the usable train returns: an intraday profile (the one
the model's baseline scale uses, ``data/volatility.py``), GARCH(1,1)-t, the EWMA decay, the
intraday HAR and its range variant, the quantile regressions, and the empirical quantiles of
each volatility baseline's standardized train residuals. `forecast_baselines` then runs over
whole series (train, validation and test in order, or a new file) with everything fixed
(``filters.py``): a forecast from an origin reads only returns up to it. Quantiles are of the
log return of each target bar in basis points, the TFT's target, for rows anchor+1 .. anchor+H.
A baseline that cannot be fitted for a symbol (too few returns, constant prices, an optimizer
error) logs one line saying why and forecasts NaN there; fitting never stops.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

import numpy as np
import pandas as pd
from scipy.special import ndtri  # scipy.stats' norm.ppf, without its 1-2 s import

from foxhunt.baselines.bars import BarReturns
from foxhunt.baselines.ewma import fit_ewma
from foxhunt.baselines.filters import (
    SymbolRows,
    next_sd,
    quantreg_rows,
    sd_paths,
    standardized,
    symbol_rows,
)
from foxhunt.baselines.fitted import FIRST_NAMES, NAMES, VOLATILITY, FittedBaselines
from foxhunt.baselines.garch import GarchFitError, GarchT, fit_garch_t, t_quantiles
from foxhunt.baselines.har import Har, fit_har
from foxhunt.baselines.quantreg import fit_quantreg
from foxhunt.baselines.realized import DEFAULT_WINDOW
from foxhunt.baselines.residuals import GRID, interpolation, residual_quantiles
from foxhunt.data.volatility import MINUTES_PER_DAY, IntradayProfile, minute_of_day

FLAT = IntradayProfile(1, np.ones(MINUTES_PER_DAY))  # a symbol never fitted: no intraday shape

log = logging.getLogger("foxhunt.baselines")

__all__ = ["FIRST_NAMES", "NAMES", "FittedBaselines", "fit_baselines", "forecast_baselines"]

T = TypeVar("T")


def _attempt(name: str, code: int, fit: Callable[[], T]) -> T | str:
    """The fit, or why it failed (logged once)."""
    try:
        return fit()
    except (GarchFitError, ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        log.warning("baseline %s unavailable for symbol code %d: %s", name, code, exc)
        return str(exc)


def har_lags(times: pd.DatetimeIndex) -> tuple[tuple[int, ...], int]:
    """The HAR's lags, bars in 1 bar, 1 hour, 1 session (the median usable bars per calendar
    day) and 1 week (5 sessions), repeated lengths once; and the bars in an hour (its target),
    from the train bars' `times`."""
    hour = max(1, round(60 / _bar_minutes(times)))
    days = np.unique(np.asarray(times.normalize().asi8), return_counts=True)[1]
    session = max(hour, int(np.median(days))) if len(days) else hour
    return tuple(sorted({1, hour, session, 5 * session})), hour


def adjusted_returns(bars: BarReturns, rows: slice, profile: IntradayProfile) -> np.ndarray:
    """[n] usable returns of `rows` divided by their minute's profile; NaN where unusable."""
    return symbol_rows(bars, rows, profile).u


def fit_baselines(bars: BarReturns, *, window: int = DEFAULT_WINDOW) -> FittedBaselines:
    fitted = FittedBaselines(window)
    for code, rows in bars.symbol_slices():
        fit = bars.usable[rows] & bars.train[rows]
        minutes = minute_of_day(bars.times[rows])
        times = bars.times[rows][fit]
        profile = IntradayProfile.fit(
            bars.returns_bp[rows][fit], minutes[fit], bucket_minutes=_bar_minutes(bars.times[rows])
        )
        fitted.profiles[code] = profile
        s = symbol_rows(bars, rows, profile)
        u, pk = s.u[fit], s.parkinson[fit] if s.parkinson is not None else None
        lags, hour = har_lags(times)

        fitted.garch[code] = _attempt("garch_t", code, partial(fit_garch_t, u))
        fitted.ewma[code] = _attempt("ewma", code, partial(fit_ewma, u))
        fitted.har[code] = _attempt("har", code, partial(fit_har, u, None, lags=lags, target=hour))
        fitted.har_range[code] = _attempt(
            "har_range", code, partial(_fit_har_range, u, pk, lags, hour)
        )
        fitted.quantreg[code] = _attempt("quantreg", code, partial(fit_quantreg, u, lags=lags[1:]))
        _fit_residuals(fitted, code, s, fit)
    return fitted


def _fit_har_range(u: np.ndarray, pk: np.ndarray | None, lags: tuple[int, ...], hour: int) -> Har:
    if pk is None:
        raise GarchFitError("the bars have no high/low range")
    return fit_har(u, pk, lags=lags, target=hour)


def _fit_residuals(fitted: FittedBaselines, code: int, s: SymbolRows, fit: np.ndarray) -> None:
    """Empirical quantiles of each volatility baseline's standardized train residuals."""
    for name, sd in next_sd(fitted, code, s).items():
        fits = fitted.residuals.setdefault(name, {})
        if not np.isfinite(sd[fit]).any():  # the baseline itself has no fit (logged already)
            fits[code] = f"{name} not fitted"
            continue
        z = standardized(s.u, sd)[fit]
        fits[code] = _attempt(f"{name}_emp", code, partial(residual_quantiles, z))


def forecast_baselines(
    fitted: FittedBaselines,
    bars: BarReturns,
    anchors: np.ndarray,
    *,
    horizon: int,
    quantiles: Sequence[float],
) -> dict[str, np.ndarray]:
    """{name: [W, H, Q]} quantile forecasts of the windows whose last observed row is
    `anchors` [W], for every name of `fitted.names`; NaN where a baseline has nothing."""
    n, nq = len(bars.returns_bp), len(quantiles)
    scale = np.ones(n)  # profile at each row
    paths = {name: np.full((n, horizon), np.nan) for name in VOLATILITY}
    z = {name: np.full((n, nq), np.nan) for name in (*VOLATILITY, *_emp(VOLATILITY))}
    qr = np.full((n, nq), np.nan)  # quantile regression, adjusted units
    gaussian = ndtri(np.asarray(quantiles, dtype=np.float64))
    to_levels = interpolation(GRID, quantiles)  # [G, Q]
    for code, rows in bars.symbol_slices():
        profile = fitted.profiles.get(code, FLAT)
        s = symbol_rows(bars, rows, profile)
        scale[rows] = s.scale
        for name, path in sd_paths(fitted, code, next_sd(fitted, code, s), horizon).items():
            paths[name][rows] = path
            z[name][rows] = gaussian
            emp = fitted.residuals.get(name, {}).get(code)
            if isinstance(emp, tuple):
                z[f"{name}_emp"][rows] = np.asarray(emp) @ to_levels
        garch = fitted.garch.get(code)
        if isinstance(garch, GarchT):
            z["garch_t"][rows] = t_quantiles(garch.nu, quantiles)
        qr[rows] = quantreg_rows(fitted, code, s, quantiles)
    anchors = np.asarray(anchors, dtype=np.int64)
    target_scale = scale[anchors[:, None] + np.arange(1, horizon + 1)]  # [W, H]
    out = {}
    for name in VOLATILITY:
        sd = paths[name][anchors] * target_scale  # [W, H]
        out[name] = sd[..., None] * z[name][anchors][:, None, :]
        out[f"{name}_emp"] = sd[..., None] * z[f"{name}_emp"][anchors][:, None, :]
    out["quantreg"] = qr[anchors][:, None, :] * target_scale[..., None]
    return {name: out[name] for name in fitted.names}


def _emp(names: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{name}_emp" for name in names)


def _bar_minutes(times: pd.DatetimeIndex) -> int:
    """The profile's bucket: the median bar spacing in whole minutes (at least 1)."""
    if len(times) < 2:
        return 1
    return max(1, round(float(np.median(np.diff(times.as_unit("ns").asi8))) / 60e9))
