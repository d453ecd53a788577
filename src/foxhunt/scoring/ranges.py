"""Each bar's high/low range in basis points, read back from a dataset's scaled inputs."""

from __future__ import annotations

import numpy as np

from foxhunt.data import Preprocessor, WindowDataset
from foxhunt.task import BASIS_POINTS

RANGE_INPUT = "log_range"  # log(high / low), an observed input of every run (data/features.py)


def log_range_bp(dataset: WindowDataset, preprocessor: Preprocessor) -> np.ndarray | None:
    """[N] log(high / low) of every row in basis points (the range-based baselines' input), the
    scaled input unscaled by its symbol's statistics; None where the run has no such input."""
    scaler = preprocessor.scaler
    if RANGE_INPUT not in scaler.names:
        return None
    column = scaler.names.index(RANGE_INPUT)
    scaled = dataset.input_column(column).astype(np.float64)
    mean, std = scaler.mean[..., column], scaler.std[..., column]
    if np.ndim(mean) == 1:  # one set of statistics per symbol
        codes = dataset.symbol_codes.numpy()
        mean, std = mean[codes], std[codes]
    return np.asarray((scaled * std + mean) * BASIS_POINTS, dtype=np.float64)
