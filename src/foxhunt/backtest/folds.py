"""Walk-forward folds cut on time: consecutive test spans at the end, training before each.

Test spans are K consecutive, non-overlapping stretches ending at the last bar, each
`test_size` long (a number of distinct timestamps, or a duration). Fold k trains on what comes
before its test span less the embargo: from the first bar (expanding) or over a fixed length
(rolling: the first fold's training length), the last `val_fraction` of it for validation.
On evenly spaced bars, expanding folds are scikit-learn's `TimeSeriesSplit(n_splits=K,
test_size=N, gap=G)` and rolling ones add `max_train_size` (tests/backtest/test_folds.py).

In a forward walk no training bar of a fold follows its test span, so the embargo is the gap
before the test span (sklearn's `gap`); the purge is the data layer's: a window never spans two
splits, so no training or validation target reaches into the embargo or the test span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from foxhunt.data.timesplit import TimeSplit, parse_duration
from foxhunt.errors import ConfigError, DataError

Scheme = Literal["expanding", "rolling"]
NO_EMBARGO = pd.Timedelta(0)


@dataclass(frozen=True)
class Fold:
    index: int
    train_start: pd.Timestamp  # the first bar, or the rolling start
    validation_start: pd.Timestamp
    test_start: pd.Timestamp
    test_end: pd.Timestamp | None  # exclusive; None = past the last bar
    embargo: pd.Timedelta
    expanding: bool  # train_start is the first bar of the file

    def split(self) -> TimeSplit:
        return TimeSplit(
            train_start=None if self.expanding else self.train_start.isoformat(),
            validation_start=self.validation_start.isoformat(),
            test_start=self.test_start.isoformat(),
            test_end=None if self.test_end is None else self.test_end.isoformat(),
            embargo=_duration_text(self.embargo),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "train": {"start": self.train_start.isoformat(), "end": self.embargo_start.isoformat()},
            "validation": {"start": self.validation_start.isoformat()},
            "test": {
                "start": self.test_start.isoformat(),
                "end": None if self.test_end is None else self.test_end.isoformat(),
            },
            "embargo": _duration_text(self.embargo),
        }

    @property
    def embargo_start(self) -> pd.Timestamp:
        return self.test_start - self.embargo


def _duration_text(value: pd.Timedelta) -> str:
    return f"{int(value.total_seconds())}s"


def parse_test_size(text: str) -> int | pd.Timedelta:
    """ "10d" (a duration) or "500" (distinct timestamps)."""
    text = str(text).strip()
    if text.isdigit():
        if int(text) < 1:
            raise ConfigError(f"--test-size {text}: must be >= 1 bar")
        return int(text)
    try:  # "10d": pandas wants the day unit upper-case
        size = pd.Timedelta(re.sub(r"(\d)d$", r"\1D", text))
    except (ValueError, TypeError):
        size = None
    if size is None or pd.isna(size) or size <= pd.Timedelta(0):
        raise ConfigError(f'--test-size {text!r}: use a duration such as "10d" or a bar count')
    return size


def parse_embargo(text: str) -> pd.Timedelta:
    return parse_duration("--embargo", text)


def cut_folds(
    times: pd.DatetimeIndex,
    *,
    folds: int,
    scheme: Scheme = "expanding",
    test_size: int | pd.Timedelta | None = None,
    embargo: pd.Timedelta = NO_EMBARGO,
    val_fraction: float = 0.15,
) -> list[Fold]:
    """Folds over the distinct timestamps `times` (tz-aware, any order, repeats allowed).

    `test_size` None: the span is cut in folds + 1 equal parts (by distinct timestamps), the
    first for the first fold's training.
    """
    distinct = pd.DatetimeIndex(np.sort(pd.unique(times.as_unit("ns").asi8))).tz_localize("UTC")
    distinct = distinct.tz_convert(times.tz)
    n = len(distinct)
    if folds < 1:
        raise ConfigError(f"--folds {folds}: must be >= 1")
    if test_size is None:
        test_size = n // (folds + 1)
        if test_size < 1:  # each test span needs a bar: --folds 100000 indexed past the end
            raise ConfigError(
                f"--folds {folds}: the data has {n} distinct timestamps, too few for "
                f"{folds} test spans and a training span; use at most {max(n - 1, 1)} folds"
            )
    test_starts = _test_starts(distinct, folds, test_size)
    ends: list[pd.Timestamp | None] = [*test_starts[1:], None]
    length = test_starts[0] - embargo - distinct[0]  # the first fold's training span
    if length <= pd.Timedelta(0) or len(set(test_starts)) < folds:
        raise ConfigError(
            f"--folds {folds}, --test-size {test_size}, --embargo {embargo}: no training span "
            f"before the first test span, or test spans without bars ({distinct[0]} .. "
            f"{distinct[-1]}); use fewer or smaller folds"
        )
    out = []
    for k, (start, end_k) in enumerate(zip(test_starts, ends, strict=True)):
        cut = start - embargo
        first = distinct[0] if scheme == "expanding" else max(distinct[0], cut - length)
        train = distinct[(distinct >= first) & (distinct < cut)]
        n_val = round(len(train) * val_fraction)
        if len(train) - n_val < 1:
            raise ConfigError(f"fold {k}: no training bar before {cut}; use fewer folds")
        out.append(
            Fold(
                index=k,
                train_start=train[0],
                validation_start=train[len(train) - n_val] if n_val else cut,
                test_start=start,
                test_end=end_k,
                embargo=embargo,
                expanding=scheme == "expanding" or first == distinct[0],
            )
        )
    return out


def _test_starts(
    distinct: pd.DatetimeIndex, folds: int, test_size: int | pd.Timedelta
) -> list[pd.Timestamp]:
    """The first timestamp of each fold's test span: the last ``folds`` spans of
    ``test_size`` (bars, or a duration) before the end of ``distinct``."""
    n = len(distinct)
    if isinstance(test_size, int):
        starts = [n - (folds - k) * test_size for k in range(folds)]
        if starts[0] < 1:
            raise ConfigError(
                f"--folds {folds} x --test-size {test_size} bars leave no training bars "
                f"(the file has {n} distinct timestamps)"
            )
        return [distinct[s] for s in starts]
    end = distinct[-1] + pd.Timedelta(1, unit="ns")
    wanted = [end - (folds - k) * test_size for k in range(folds)]
    return [distinct[int(distinct.searchsorted(w))] for w in wanted]


def leaking_targets(target_times_ns: np.ndarray, folds: list[Fold], k: int) -> int:
    """How many target timestamps of fold k's training or validation windows fall in a test
    span of fold k or later, or in the embargo before it (0 for a sound cut)."""
    t = np.asarray(target_times_ns, dtype=np.int64).ravel()
    hits = np.zeros(len(t), dtype=bool)
    for fold in folds[k:]:
        end = np.iinfo(np.int64).max if fold.test_end is None else fold.test_end.value
        hits |= (t >= fold.embargo_start.value) & (t < end)
    return int(hits.sum())


def check_every_symbol_trains(frame: pd.DataFrame, folds: list[Fold], source: str) -> None:
    """Each symbol has bars in every fold's training span (issue 42): a fold's job refuses a
    symbol without (data/fit.py), but only once the backtest folder was written."""
    times = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    symbols = frame["symbol"].astype(str).to_numpy()
    for fold in folds:
        inside = (times >= fold.train_start.value) & (times < fold.validation_start.value)
        missing = sorted(set(symbols) - set(symbols[inside]))
        if missing:
            first = pd.Timestamp(times[symbols == missing[0]].min(), tz="UTC").tz_convert(
                fold.train_start.tz
            )
            raise DataError(
                f"{source}: symbol {missing[0]!r} has no bar in fold {fold.index}'s training "
                f"span ({fold.train_start} .. {fold.validation_start}; its first bar is "
                f"{first}): leave it out (--symbols the others), or use fewer --folds or a "
                "shorter --test-size"
            )
