"""The bars a volatility baseline sees: plain arrays, no dataset or model types.

Rows are all series concatenated, sorted by symbol then time (as in `foxhunt.data`). A row is
`usable` when its return is finite and does not span a gap longer than the run's max gap:
returns over a session break or a weekend are a different quantity from a 5-minute return, so
the baselines neither fit on them nor feed them to a filter. With no max gap every finite
return is usable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

BASIS_POINTS = 1e4


@dataclass(frozen=True, kw_only=True)
class BarReturns:
    times: pd.DatetimeIndex  # [N] tz-aware, in the exchange's local time (the bars' timezone)
    returns_bp: np.ndarray  # [N] float64 log return of each bar in basis points (NaN: none)
    symbol_codes: np.ndarray  # [N] int64, non-decreasing
    usable: np.ndarray  # [N] bool
    train: np.ndarray  # [N] bool: the span the baselines are fitted on
    #: [N] float64 log(high / low) of each bar in basis points, or None: no high/low (the
    #: range-based baselines are then NaN)
    range_bp: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.times)
        for name in ("returns_bp", "symbol_codes", "usable", "train", "range_bp"):
            if getattr(self, name) is not None and len(getattr(self, name)) != n:
                raise ValueError(f"BarReturns.{name} has {len(getattr(self, name))} rows, not {n}")
        if n and np.any(np.diff(self.symbol_codes) < 0):
            raise ValueError("BarReturns rows must be sorted by symbol code")

    def symbol_slices(self) -> Iterator[tuple[int, slice]]:
        """(code, rows) of each symbol's contiguous block."""
        codes = self.symbol_codes
        edges = np.flatnonzero(np.diff(codes)) + 1
        for start, stop in zip(
            np.concatenate([[0], edges]), np.concatenate([edges, [len(codes)]]), strict=True
        ):
            if stop > start:
                yield int(codes[start]), slice(int(start), int(stop))
