"""`DataSummary`: the counts of a prepared run, logged once and kept with a feature store."""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

log = logging.getLogger("foxhunt.data")


@dataclass(frozen=True)
class DataSummary:
    """Counts for logs and reports."""

    source: str
    rows: int
    symbols: tuple[str, ...]
    bar_spacing: pd.Timedelta
    max_gap: pd.Timedelta | None
    gaps: int  # gaps longer than max_gap between consecutive bars of a symbol
    windows: dict[str, int]  # per split
    dropped_for_gaps: int  # windows that would be valid if gaps were ignored
    validation_start: pd.Timestamp | None
    test_start: pd.Timestamp | None
    purged: int = 0  # train/validation windows whose targets would reach into the next split

    def log(self) -> None:
        log.info(
            "data: %s: %d rows, %d symbols, bar spacing %s, %d gaps over %s, windows "
            "train/validation/test %d/%d/%d (%d dropped at gaps)",
            self.source,
            self.rows,
            len(self.symbols),
            self.bar_spacing,
            self.gaps,
            self.max_gap,
            *self.windows.values(),
            self.dropped_for_gaps,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: durations in nanoseconds, times as [nanoseconds, timezone], the windows
        as [split, count] pairs (their order kept through a sorting JSON writer)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["symbols"] = list(self.symbols)
        out["windows"] = [[k, v] for k, v in self.windows.items()]
        for name in ("bar_spacing", "max_gap"):
            out[name] = None if out[name] is None else int(out[name].value)
        for name in ("validation_start", "test_start"):
            time = out[name]
            out[name] = None if time is None else [int(time.value), str(time.tz)]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataSummary:
        def delta(value: int | None) -> pd.Timedelta | None:
            return None if value is None else pd.Timedelta(value, unit="ns")

        def stamp(value: list[Any] | None) -> pd.Timestamp | None:
            return None if value is None else pd.Timestamp(value[0], unit="ns", tz=value[1])

        return cls(
            **{
                **data,
                "symbols": tuple(data["symbols"]),
                "windows": dict(data["windows"]),
                "bar_spacing": delta(data["bar_spacing"]),
                "max_gap": delta(data["max_gap"]),
                "validation_start": stamp(data["validation_start"]),
                "test_start": stamp(data["test_start"]),
            }
        )
