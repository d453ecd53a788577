"""Coherent quantiles: a forecast whose q-th quantile lies below its p-th (p < q) is no
distribution. Models built since `TFTConfig.sort_quantiles` sort their output, so this only
fires for runs saved before it; the test suite turns the warning into an error (pyproject's
`filterwarnings`), which asserts coherence wherever a test makes predictions."""

from __future__ import annotations

import warnings

import numpy as np


class CrossingQuantilesWarning(UserWarning):
    """Some forecasts have crossing quantiles."""


def crossed_forecasts(quantiles: np.ndarray) -> int:
    """Forecasts (all axes but the last, the quantile levels in increasing order) whose
    quantiles are not in increasing order."""
    if quantiles.shape[-1] < 2:
        return 0
    crossed = (np.diff(quantiles, axis=-1) < 0).any(axis=-1)
    return int(crossed.sum())


def check_coherent(quantiles: np.ndarray, where: str) -> None:
    """Warn, saying what to do, when any forecast's quantiles cross."""
    crossed = crossed_forecasts(quantiles)
    if crossed:
        total = int(np.prod(quantiles.shape[:-1]))
        warnings.warn(
            CrossingQuantilesWarning(
                f"{where}: {crossed} of {total} forecasts have crossing quantiles (a model "
                "saved before sort_quantiles); retrain it to get sorted, coherent quantiles"
            ),
            stacklevel=2,
        )
