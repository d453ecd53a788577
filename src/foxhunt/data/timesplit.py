"""Explicit time bounds for train, validation and test (one walk-forward fold), with an embargo.

The fractions of `DataConfig` cut one split at the end of a file; a backtest needs each fold's
spans named in time. Rows are coded 0 train, 1 validation, 2 test, and UNUSED (before the
training start, inside the embargo, at or after the test end). A window never spans two
codes (`data/windows.py` starts a new segment where the code changes), which is the purge: no
training or validation window's target reaches into the embargo or the test span.

    train [train_start, validation_start)  validation [validation_start, test_start - embargo)
    embargo [test_start - embargo, test_start)  test [test_start, test_end)
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.errors import ConfigError

UNUSED = 3  # the row is in no split: before training, in the embargo, after the test


def parse_instant(name: str, value: str) -> pd.Timestamp:
    """An ISO 8601 timestamp with an offset (a naive one is ambiguous across timezones)."""
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        raise ConfigError(f"TimeSplit.{name}={value!r}: not an ISO 8601 timestamp") from None
    if pd.isna(stamp) or stamp.tzinfo is None:
        raise ConfigError(
            f"TimeSplit.{name}={value!r}: give a UTC offset, e.g. 2024-03-01T09:30:00-05:00"
        )
    return stamp


def parse_duration(name: str, value: str) -> pd.Timedelta:
    """A duration >= 0 ("1h", "0min"); `name` is what the error names (a field or a flag)."""
    try:  # "10d": pandas 3 deprecates the lower-case day unit (parse_test_size does the same)
        duration = pd.Timedelta(re.sub(r"(\d)\s*d$", r"\1D", str(value).strip()))
    except (ValueError, TypeError):
        duration = None
    if duration is None or pd.isna(duration) or duration < pd.Timedelta(0):
        raise ConfigError(f'{name} {value!r}: use a duration >= 0 such as "1h" or "0min"')
    return duration


@dataclass(frozen=True, kw_only=True)
class TimeSplit:
    """One fold's spans in time; every bound is ISO 8601 with an offset, ends are exclusive.

    Attributes:
        train_start: first training bar; None = the first bar of the file.
        validation_start: end of training and start of validation (early stopping); equal to
            `test_start - embargo` for no validation.
        test_start: first test bar.
        test_end: end of the test span (exclusive); None = past the last bar.
        embargo: a gap before `test_start` (a pandas duration, "1h") that no training or
            validation bar (or window target) falls in: the rows just before the test span
            share its volatility regime and serially correlated labels.
    """

    train_start: str | None = None
    validation_start: str
    test_start: str
    test_end: str | None = None
    embargo: str = "0min"

    def __post_init__(self) -> None:
        self.bounds_ns()  # validates

    def bounds_ns(self) -> tuple[int, int, int, int, int]:
        """(train_start, validation_start, embargo_start, test_start, test_end) in UTC ns."""
        low, high = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)

        def ns(name: str, value: str | None, default: int) -> int:
            return default if value is None else int(parse_instant(name, value).value)

        test = ns("test_start", self.test_start, 0)
        bounds = (
            ns("train_start", self.train_start, low),
            ns("validation_start", self.validation_start, 0),
            test - int(parse_duration("TimeSplit.embargo", self.embargo).value),
            test,
            ns("test_end", self.test_end, high),
        )
        if not bounds[0] < bounds[1] <= bounds[2] <= bounds[3] < bounds[4]:
            raise ConfigError(
                f"TimeSplit: need train_start < validation_start <= test_start - embargo "
                f"<= test_start < test_end, got {self.train_start} / {self.validation_start} / "
                f"{self.test_start} - {self.embargo} / {self.test_end}"
            )
        return bounds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TimeSplit:
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"TimeSplit: unknown fields {unknown}")
        return cls(**data)


def time_split_codes(times_ns: np.ndarray, split: TimeSplit) -> np.ndarray:
    """[N] int8: 0 train, 1 validation, 2 test, UNUSED elsewhere (see the module docstring)."""
    start, validation, embargo, test, end = split.bounds_ns()
    codes = np.full(len(times_ns), UNUSED, dtype=np.int8)
    codes[(times_ns >= start) & (times_ns < validation)] = 0
    codes[(times_ns >= validation) & (times_ns < embargo)] = 1
    codes[(times_ns >= test) & (times_ns < end)] = 2
    return codes
