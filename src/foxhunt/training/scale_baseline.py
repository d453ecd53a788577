"""The rolling-volatility baseline scored from the windows themselves: scale * z_q.

It is exactly what a model with output="baseline" forecasts before training, so a run can
report it on the very windows its model is scored on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from foxhunt.batch import TFTBatch
from foxhunt.training.inference import sequential_batches


def gaussian_scale_forecast(
    dataset: Dataset[TFTBatch], quantiles: Sequence[float], batch_size: int = 4096
) -> np.ndarray | None:
    """[N, H, Q] Gaussian quantiles with each window's baseline scale (scaled units);
    None when the windows carry no scale (a version-1 preprocessor)."""
    z = torch.special.ndtri(torch.tensor(tuple(quantiles), dtype=torch.float64)).numpy()
    parts = []
    for batch in sequential_batches(dataset, batch_size):
        if batch.scale is None:
            return None
        parts.append(batch.scale.numpy().astype(np.float64)[..., None] * z)
    return np.concatenate(parts) if parts else None
