"""A Parquet file of synthetic bars, as the command-line tests read them; a GARCH-t market."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data import generate_bars


def write_bars(path: Path, *, days: int = 8, seed: int = 1) -> Path:
    """``generate_bars(days, seed)`` written to ``path``: the suite-wide ``bars_file``
    (tests/conftest.py) is the default, eight sessions of seed 1."""
    generate_bars(days=days, seed=seed).to_parquet(path)
    return path


def garch_bars(days: int, seed: int) -> pd.DataFrame:
    """Synthetic ES bars whose returns are a GARCH(1,1) with Student-t(8) shocks: strong
    clustering that reverts to a level, which GARCH-t models and the others only approach."""
    frame = generate_bars(days=days, seed=seed)
    rng = np.random.default_rng(seed)
    nu, omega, alpha, beta = 8.0, 0.05, 0.25, 0.7
    z = rng.standard_t(nu, len(frame)) / np.sqrt(nu / (nu - 2))
    returns, variance = np.empty(len(frame)), omega / (1 - alpha - beta)
    for t in range(len(frame)):
        returns[t] = np.sqrt(variance) * z[t]
        variance = omega + alpha * returns[t] ** 2 + beta * variance
    close = 5000 * np.exp(np.cumsum(returns) * 1e-3)
    opened = np.concatenate([[5000.0], close[:-1]])
    frame["open"], frame["close"] = opened, close
    frame["high"], frame["low"] = np.maximum(opened, close), np.minimum(opened, close)
    return frame
