"""Block bootstrap of a mean over days: how sure is a difference in loss?

Forecast errors of one day move together (they share that day's volatility), so windows are
resampled by whole days (blocks) with replacement, not one by one; resampling windows would
treat a day's 70 correlated errors as 70 independent draws and make every interval too tight.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

Array = NDArray[np.float64]


def block_means(diff: Array, blocks: NDArray[np.int64], resamples: int, seed: int = 0) -> Array:
    """[resamples] means of `diff` [N] over resamples of its blocks [N] (any labels)."""
    _, inverse = np.unique(blocks, return_inverse=True)
    sums = np.bincount(inverse, weights=diff)
    counts = np.bincount(inverse).astype(np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(sums), size=(resamples, len(sums)))
    return np.asarray(sums[draws].sum(axis=1) / counts[draws].sum(axis=1), dtype=np.float64)


def interval(
    diff: Array, blocks: NDArray[np.int64], resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95% interval of mean(diff) by the percentile block bootstrap."""
    low, high = np.quantile(block_means(diff, blocks, resamples, seed), [0.025, 0.975])
    return float(low), float(high)


def share_below_zero(diff: Array, blocks: NDArray[np.int64], resamples: int = 2000) -> float:
    """Share of resampled means of `diff` below zero: the bootstrap's confidence that the
    mean difference is negative (e.g. that a candidate's loss is lower than a reference's)."""
    return float(np.mean(block_means(diff, blocks, resamples) < 0.0))


def day_blocks(times: pd.DatetimeIndex) -> NDArray[np.int64]:
    """[N] a label per calendar day of `times`, in their own timezone."""
    return np.asarray(pd.DatetimeIndex(times).normalize().asi8, dtype=np.int64)
