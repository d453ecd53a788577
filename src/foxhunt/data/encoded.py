"""What the preprocessor works on: a validated frame with its features, and the schema of the
windows it hands out."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from foxhunt.data.contracts import contract_series_starts
from foxhunt.data.features import Features, FeatureSpec, compute_features


@dataclass(frozen=True)
class FeatureSchema:
    """Names and sizes of the model inputs, in the order of the tensor columns."""

    static_names: tuple[str, ...]
    static_categorical_names: tuple[str, ...]
    static_cardinalities: tuple[int, ...]
    past_names: tuple[str, ...]  # observed inputs, then known inputs
    future_names: tuple[str, ...]  # known inputs
    target_name: str


@dataclass(frozen=True)
class EncodedFrame:
    """A validated frame (sorted by symbol, [contract,] time) with its unscaled features.

    `symbol_codes` feed the model's symbol embedding; `series_codes` bound everything that
    must not reach across series (returns, rolling features, volatility, windows, gaps): the
    same as the symbol codes, or one series per contract with a contract column.
    """

    frame: pd.DataFrame
    times: pd.DatetimeIndex
    symbol_codes: np.ndarray  # [N] int64, non-decreasing
    features: Features
    finite: np.ndarray  # [N] bool
    series_codes: np.ndarray  # [N] int64, non-decreasing

    @classmethod
    def build(
        cls,
        frame: pd.DataFrame,
        spec: FeatureSpec,
        *,
        timezone: str,
        codes: np.ndarray,
        contract_column: str | None = None,
    ) -> EncodedFrame:
        times = pd.DatetimeIndex(frame["timestamp"])
        series = np.cumsum(contract_series_starts(codes, frame, contract_column)) - 1
        features = compute_features(frame, spec, timezone=timezone, symbol_codes=series)
        return cls(frame, times, codes, features, features.finite_rows, series)

    @functools.cached_property
    def times_ns(self) -> np.ndarray:
        """[N] int64 nanoseconds since the epoch: the index's own integers when its unit is
        nanoseconds (a stored entry's mapped file: no copy), else converted once."""
        return self.times.asi8 if self.times.unit == "ns" else self.times.as_unit("ns").asi8

    def log_ranges(self) -> np.ndarray:
        """[N] float32 log of each bar's log range log(high / low): the range loss's target
        (task/loss.py), a far less noisy measure of the bar's volatility than its return.
        NaN where the bar has no range (high <= low: a flat bar, or a bad quote)."""
        high = self.frame["high"].to_numpy(np.float64)
        low = self.frame["low"].to_numpy(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.log(high / low)
            logs = np.log(np.where(spread > 0, spread, np.nan))
        return logs.astype(np.float32)
