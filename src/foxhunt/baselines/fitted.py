"""What the baselines fitted on the train span, per symbol code: saved in baseline.json.

Each fit is its parameters or, where it could not be fitted, the reason (a string): that
baseline's forecasts for the symbol are NaN. A state fitted before the EWMA, HAR,
quantile-regression and empirical-residual baselines has `extended` False (its baseline.json's
migration says so, foxhunt/migrations.py) and forecasts only the rows it had (rolling vol and
GARCH-t).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from foxhunt.baselines.garch import GarchT
from foxhunt.baselines.har import Har
from foxhunt.baselines.quantreg import QuantRegFit
from foxhunt.baselines.realized import DEFAULT_WINDOW
from foxhunt.baselines.residuals import check_residual_quantiles
from foxhunt.data.volatility import IntradayProfile

#: volatility baselines: a standard deviation path, Gaussian or Student-t quantiles
VOLATILITY = ("realized_vol", "garch_t", "ewma", "har", "har_range")
#: every baseline forecast, in table order; `<vol>_emp` uses the empirical residual quantiles
NAMES = (*VOLATILITY, "quantreg", *(f"{name}_emp" for name in VOLATILITY))
#: the rows of a state fitted before the extended baselines (``extended`` False)
FIRST_NAMES = ("realized_vol", "garch_t")

T = TypeVar("T")


def _save(fits: dict[int, T | str], state: Callable[[T], Any]) -> dict[str, Any]:
    return {str(c): {"error": f} if isinstance(f, str) else state(f) for c, f in fits.items()}


def _load(saved: dict[str, Any], load: Callable[[Any], T]) -> dict[int, T | str]:
    return {int(c): str(s["error"]) if "error" in s else load(s) for c, s in saved.items()}


def _lam(state: dict[str, Any]) -> float:
    lam = float(state["lam"])
    if not 0.0 < lam < 1.0:
        raise ValueError(f"EWMA decay {lam} must be in (0, 1)")
    return lam


def _residuals(state: dict[str, Any]) -> tuple[float, ...]:
    check_residual_quantiles(state["quantiles"])
    return tuple(float(v) for v in state["quantiles"])


@dataclass(frozen=True)
class FittedBaselines:
    """Per symbol code: its profile and every baseline's fit (or why it failed)."""

    window: int = DEFAULT_WINDOW
    profiles: dict[int, IntradayProfile] = field(default_factory=dict)
    garch: dict[int, GarchT | str] = field(default_factory=dict)
    ewma: dict[int, float | str] = field(default_factory=dict)
    har: dict[int, Har | str] = field(default_factory=dict)
    har_range: dict[int, Har | str] = field(default_factory=dict)
    quantreg: dict[int, QuantRegFit | str] = field(default_factory=dict)
    #: {volatility baseline: {code: its standardized residuals' quantiles at GRID}}
    residuals: dict[str, dict[int, tuple[float, ...] | str]] = field(default_factory=dict)
    extended: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        return NAMES if self.extended else FIRST_NAMES

    def state_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "profiles": {str(c): p.state_dict() for c, p in self.profiles.items()},
            "garch_t": _save(self.garch, GarchT.state_dict),
            "ewma": _save(self.ewma, lambda lam: {"lam": lam}),
            "har": _save(self.har, Har.state_dict),
            "har_range": _save(self.har_range, Har.state_dict),
            "quantreg": _save(self.quantreg, QuantRegFit.state_dict),
            "residuals": {
                name: _save(fits, lambda q: {"quantiles": list(q)})
                for name, fits in self.residuals.items()
            },
            "extended": self.extended,
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> FittedBaselines:
        """Inverse of ``state_dict`` (of today's baseline.json: foxhunt/migrations.py);
        ValueError naming the field that makes no forecast."""
        garch = _load(state["garch_t"], lambda g: GarchT(**g))
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
        extended = state["extended"]
        if not isinstance(extended, bool):
            raise ValueError(f"extended must be true or false, got {extended!r}")
        return cls(
            window,
            profiles,
            garch,
            ewma=_load(state["ewma"], _lam),
            har=_load(state["har"], Har.from_state_dict),
            har_range=_load(state["har_range"], Har.from_state_dict),
            quantreg=_load(state["quantreg"], QuantRegFit.from_state_dict),
            residuals={n: _load(f, _residuals) for n, f in state["residuals"].items()},
            extended=extended,
        )
