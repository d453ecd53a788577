"""Fit the volatility baselines on the train span, then forecast from any window origins.

`fit_baselines` fits, per symbol, an intraday profile (the one the model's baseline scale uses,
``data/volatility.py``) and a GARCH(1,1)-t on the usable train returns. `forecast_baselines` then runs over whole series (train, validation and test in
order, or a new file) with everything fixed: rolling vol and the GARCH filter only ever read
returns up to each origin. Quantiles are of the log return of each target bar in basis
points, the TFT's target, for rows anchor+1 .. anchor+H.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.baselines.bars import BarReturns
from foxhunt.baselines.garch import (
    GarchFitError,
    GarchT,
    filter_variance,
    fit_garch_t,
    t_quantiles,
    variance_paths,
)
from foxhunt.baselines.realized import DEFAULT_WINDOW, gaussian_quantiles
from foxhunt.data.volatility import MINUTES_PER_DAY, IntradayProfile, causal_rms, minute_of_day

FLAT = IntradayProfile(1, np.ones(MINUTES_PER_DAY))  # a symbol never fitted: no intraday shape

log = logging.getLogger("foxhunt.baselines")

NAMES = ("realized_vol", "garch_t")


@dataclass(frozen=True)
class FittedBaselines:
    """Per symbol code: its profile and GARCH parameters (or why GARCH failed)."""

    window: int = DEFAULT_WINDOW
    profiles: dict[int, IntradayProfile] = field(default_factory=dict)
    garch: dict[int, GarchT | str] = field(default_factory=dict)

    def state_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "profiles": {str(c): p.state_dict() for c, p in self.profiles.items()},
            "garch_t": {
                str(c): g.state_dict() if isinstance(g, GarchT) else {"error": g}
                for c, g in self.garch.items()
            },
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> FittedBaselines:
        """Inverse of ``state_dict``; ValueError naming the field that makes no forecast."""
        garch: dict[int, GarchT | str] = {
            int(c): str(g["error"]) if "error" in g else GarchT(**g)
            for c, g in state["garch_t"].items()
        }
        for code, params in garch.items():
            if isinstance(params, GarchT) and (problem := params.problem()) is not None:
                raise ValueError(f"garch_t of symbol {code}: {problem}")
        profiles = {
            int(c): IntradayProfile.from_state_dict(p) for c, p in state["profiles"].items()
        }
        for code, profile in profiles.items():
            values = profile.values
            if not (np.isfinite(values).all() and (values > 0).all() and values.max() < 1e6):
                raise ValueError(f"profile of symbol {code}: values must be finite, in (0, 1e6)")
        window = int(state["window"])
        if window < 2:
            raise ValueError(f"window {window} must be >= 2")
        return cls(window, profiles, garch)


def adjusted_returns(bars: BarReturns, rows: slice, profile: IntradayProfile) -> np.ndarray:
    """[n] usable returns of `rows` divided by their minute's profile; NaN where unusable."""
    r = bars.returns_bp[rows] / profile(minute_of_day(bars.times[rows]))
    return np.where(bars.usable[rows], r, np.nan)


def fit_baselines(bars: BarReturns, *, window: int = DEFAULT_WINDOW) -> FittedBaselines:
    profiles: dict[int, IntradayProfile] = {}
    garch: dict[int, GarchT | str] = {}
    for code, rows in bars.symbol_slices():
        fit = bars.usable[rows] & bars.train[rows]
        minutes = minute_of_day(bars.times[rows])
        profiles[code] = IntradayProfile.fit(
            bars.returns_bp[rows][fit], minutes[fit], bucket_minutes=_bar_minutes(bars.times[rows])
        )
        try:
            garch[code] = fit_garch_t(adjusted_returns(bars, rows, profiles[code])[fit])
        except GarchFitError as exc:
            log.warning("baseline garch_t unavailable for symbol code %d: %s", code, exc)
            garch[code] = str(exc)
    return FittedBaselines(window, profiles, garch)


def forecast_baselines(
    fitted: FittedBaselines,
    bars: BarReturns,
    anchors: np.ndarray,
    *,
    horizon: int,
    quantiles: Sequence[float],
) -> dict[str, np.ndarray]:
    """{name: [W, H, Q]} quantile forecasts of the windows whose last observed row is
    `anchors` [W]; NaN where a baseline has nothing (no GARCH fit for the symbol)."""
    n = len(bars.returns_bp)
    scale = np.ones(n)  # profile at each row
    vol = np.full(n, np.nan)  # realized vol at each row as origin
    paths = np.full((n, horizon), np.nan)  # GARCH variances of steps 1..H from each row
    z_t = np.full((n, len(quantiles)), np.nan)
    for code, rows in bars.symbol_slices():
        profile = fitted.profiles.get(code, FLAT)
        scale[rows] = profile(minute_of_day(bars.times[rows]))
        u = adjusted_returns(bars, rows, profile)
        vol[rows] = causal_rms(u, fitted.window, np.arange(len(u)) == 0)
        garch = fitted.garch.get(code, "not fitted")
        usable = bars.usable[rows]
        if isinstance(garch, GarchT) and usable.any():
            sigma2 = filter_variance(garch, u[usable])  # [n_usable + 1]
            seen = np.cumsum(usable)  # usable returns up to each row: the next is sigma2[seen]
            paths[rows] = variance_paths(garch, sigma2[seen], horizon)
            z_t[rows] = t_quantiles(garch.nu, quantiles)
    anchors = np.asarray(anchors, dtype=np.int64)
    targets = anchors[:, None] + np.arange(1, horizon + 1)  # [W, H]
    target_scale = scale[targets]
    garch_sd = np.sqrt(paths[anchors]) * target_scale  # [W, H]
    return {
        "realized_vol": gaussian_quantiles(vol[anchors], target_scale, quantiles),
        "garch_t": garch_sd[..., None] * z_t[anchors][:, None, :],
    }


def _bar_minutes(times: pd.DatetimeIndex) -> int:
    """The profile's bucket: the median bar spacing in whole minutes (at least 1)."""
    if len(times) < 2:
        return 1
    return max(1, round(float(np.median(np.diff(times.as_unit("ns").asi8))) / 60e9))
