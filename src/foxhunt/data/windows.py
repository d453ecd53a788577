"""Which windows are valid, and the time split, with array arithmetic: no loop per window.

Rows are all series concatenated, sorted by symbol then time. A window with anchor t (its last
observed bar) covers rows t-L+1 .. t+H. It is valid iff none of its rows starts a new
"segment" (another symbol, another split, or a gap longer than max_gap after the previous
row), except the first, and every one of its rows is finite. With C the cumulative count of
segment starts, that is C[t+H] - C[t-L+1] == 0: two gathers per window, all at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from foxhunt.errors import DataError

if TYPE_CHECKING:
    from foxhunt.data.config import DataConfig

log = logging.getLogger("foxhunt.data")

SPLITS = ("train", "validation", "test")
NO_CUT = np.iinfo(np.int64).max


def split_cuts(times_ns: np.ndarray, val_fraction: float, test_fraction: float) -> np.ndarray:
    """[2] int64: first timestamp of validation and of test, the same for every symbol.

    The cuts divide the distinct timestamps of all symbols by the fractions; a split with
    fraction 0 starts at NO_CUT (never).
    """
    distinct = np.sort(pd.unique(times_ns))  # hashing beats np.unique's sort of all rows
    return distinct_cuts(distinct, val_fraction, test_fraction)


def distinct_cuts(distinct: np.ndarray, val_fraction: float, test_fraction: float) -> np.ndarray:
    """`split_cuts` of the sorted distinct timestamps `distinct` (streamed.py gathers them
    a symbol at a time)."""
    n = len(distinct)
    n_test = round(n * test_fraction)
    n_val = round(n * val_fraction)
    starts = (n - n_test - n_val, n - n_test)
    sizes = (n_val, n_test)
    cuts = [
        distinct[s] if size > 0 and s < n else NO_CUT for s, size in zip(starts, sizes, strict=True)
    ]
    if cuts[0] == NO_CUT:  # no validation: it ends where test starts
        cuts[0] = cuts[1]
    return np.asarray(cuts, dtype=np.int64)


def split_codes(times_ns: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """[N] int8: 0 train, 1 validation, 2 test."""
    return ((times_ns >= cuts[0]).astype(np.int8) + (times_ns >= cuts[1])).astype(np.int8)


def gap_flags(symbol_codes: np.ndarray, times_ns: np.ndarray, max_gap_ns: int | None) -> np.ndarray:
    """[N] bool: more than max_gap passed since the previous bar of the same symbol."""
    flags = np.zeros(len(times_ns), dtype=bool)
    if max_gap_ns is not None and len(times_ns) > 1:
        same = symbol_codes[1:] == symbol_codes[:-1]
        flags[1:] = same & (np.diff(times_ns) > max_gap_ns)
    return flags


def median_spacing_ns(symbol_codes: np.ndarray, times_ns: np.ndarray) -> int:
    """Median time between consecutive bars of the same symbol."""
    same = symbol_codes[1:] == symbol_codes[:-1]
    diffs = np.diff(times_ns)[same]
    return int(np.median(diffs)) if len(diffs) else 0


def segment_starts(*keys: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
    """[N] bool: the row differs from the previous one in any key, or `extra` is set."""
    n = len(keys[0])
    starts = np.zeros(n, dtype=bool)
    if n:
        starts[0] = True
    for key in keys:
        starts[1:] |= key[1:] != key[:-1]
    if extra is not None:
        starts |= extra
    return starts


def valid_anchors(
    starts: np.ndarray, finite: np.ndarray, *, lookback: int, horizon: int
) -> np.ndarray:
    """int64 anchors t whose rows t-L+1 .. t+H lie in one segment and are all finite."""
    n, length = len(starts), lookback + horizon
    if n < length:
        return np.zeros(0, dtype=np.int64)
    seg = np.concatenate([[0], np.cumsum(starts, dtype=np.int64)])  # seg[k] = sum starts[:k]
    bad = np.concatenate([[0], np.cumsum(~finite, dtype=np.int64)])
    first = np.arange(n - length + 1)  # window's first row
    last = first + length - 1
    same_segment = seg[last + 1] - seg[first + 1] == 0  # no start after the first row
    all_finite = bad[last + 1] - bad[first] == 0
    return (first[same_segment & all_finite] + lookback - 1).astype(np.int64)


@dataclass(frozen=True)
class WindowIndex:
    """Valid anchors of each split, and how many windows gaps cost."""

    anchors: dict[str, np.ndarray]
    gaps: int  # gaps longer than max_gap between consecutive bars of a symbol
    dropped_for_gaps: int  # windows valid but for a gap
    #: train and validation windows dropped because their targets would run into the next
    #: split (validation, the embargo, the test span): the purge
    purged: int = 0


def index_windows(
    symbol_codes: np.ndarray,
    splits: np.ndarray,
    times_ns: np.ndarray,
    finite: np.ndarray,
    *,
    lookback: int,
    horizon: int,
    max_gap_ns: int | None,
) -> WindowIndex:
    gaps = gap_flags(symbol_codes, times_ns, max_gap_ns)
    kwargs = {"lookback": lookback, "horizon": horizon}
    anchors = valid_anchors(segment_starts(symbol_codes, splits, extra=gaps), finite, **kwargs)
    without_gaps = valid_anchors(segment_starts(symbol_codes, splits), finite, **kwargs)
    split_of = splits[anchors]
    # purged: whole (one symbol, no gap) train/validation windows whose targets leave the split
    unsplit = valid_anchors(segment_starts(symbol_codes, extra=gaps), finite, **kwargs)
    own = splits[unsplit]
    purged = (
        (own <= 1) & (splits[unsplit - lookback + 1] == own) & (splits[unsplit + horizon] != own)
    )
    return WindowIndex(
        anchors={name: anchors[split_of == code] for code, name in enumerate(SPLITS)},
        gaps=int(gaps.sum()),
        dropped_for_gaps=len(without_gaps) - len(anchors),
        purged=int(purged.sum()),
    )


def check_windows(index: WindowIndex, config: DataConfig, source: str, warmup: int) -> None:
    """Every split that should have windows has one (DataError naming the split)."""
    fractions = {"train": 1.0, "validation": config.val_fraction, "test": config.test_fraction}
    if config.split is not None:  # an empty validation span (no early stopping) is allowed
        bounds = config.split.bounds_ns()
        fractions["validation"] = float(bounds[2] > bounds[1])
        fractions["test"] = 1.0
    for name in SPLITS:
        if fractions[name] > 0 and len(index.anchors[name]) == 0:
            raise DataError(
                f"{source}: the {name} split has no complete window of lookback "
                f"{config.lookback} + horizon {config.horizon} bars (after a rolling warm-up of "
                f"{max(warmup, config.baseline_window)} bars, with max_gap "
                f"{config.max_gap}); use more bars, a smaller lookback/horizon or larger "
                "val_fraction/test_fraction"
            )


#: a train split keeping fewer windows than this share of its bars gets a warning
MIN_TRAIN_SHARE = 0.5


def warn_short_train(windows: int, bars: int, warmup: int, source: str) -> None:
    """One warning when the train split keeps under MIN_TRAIN_SHARE of its bars as windows:
    the feature warm-up ate most of 10 days of 1-minute bars under tft-225 (2408 windows of
    the train span's bars) without a word, and the baselines fitted there exploded (issue 42)."""
    if bars and windows < MIN_TRAIN_SHARE * bars:
        log.warning(
            "%s: the train split keeps %d windows of its %d bars (%.0f%%, under %.0f%%): the "
            "warm-up (%d bars per series), lookback + horizon and gaps take the rest; use more "
            "bars, shorter feature windows or a larger train share",
            source,
            windows,
            bars,
            100 * windows / bars,
            100 * MIN_TRAIN_SHARE,
            warmup,
        )
