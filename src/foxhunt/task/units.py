"""The units forecasts are reported in: basis points of log return."""

from __future__ import annotations

from foxhunt.baselines import BASIS_POINTS  # one definition: the baselines' bars use it too
from foxhunt.data import Preprocessor

UNIT = "basis points of log return"

__all__ = ["BASIS_POINTS", "UNIT", "bp_per_unit"]


def bp_per_unit(preprocessor: Preprocessor) -> float:
    """Basis points per scaled target unit: the model predicts returns divided by the
    preprocessor's target scale; this multiplier reads them in basis points."""
    return preprocessor.target_scale * BASIS_POINTS
