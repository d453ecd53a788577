"""Folds: the same boundaries as scikit-learn's TimeSeriesSplit, and no training target in a
later-or-equal test span or its embargo (a property test), with a planted leak caught."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import TimeSeriesSplit

from foxhunt.backtest.folds import cut_folds, leaking_targets
from foxhunt.data.timesplit import UNUSED, time_split_codes
from foxhunt.data.windows import index_windows, segment_starts, valid_anchors

SPACING = pd.Timedelta("5min")


def even_times(n: int) -> pd.DatetimeIndex:
    return pd.date_range("2024-03-04 09:30", periods=n, freq=SPACING, tz="America/New_York")


@pytest.mark.parametrize("scheme", ["expanding", "rolling"])
@pytest.mark.parametrize(("n", "folds", "test_size", "gap"), [(200, 4, 30, 3), (97, 3, 11, 0)])
def test_folds_match_sklearn_time_series_split(
    scheme: str, n: int, folds: int, test_size: int, gap: int
) -> None:
    times = even_times(n)
    cut = cut_folds(
        times,
        folds=folds,
        scheme=scheme,  # type: ignore[arg-type]
        test_size=test_size,
        embargo=gap * SPACING,
        val_fraction=0.2,
    )
    first_train = n - folds * test_size - gap
    reference = TimeSeriesSplit(
        n_splits=folds,
        test_size=test_size,
        gap=gap,
        max_train_size=first_train if scheme == "rolling" else None,
    )
    for fold, (train, test) in zip(cut, reference.split(np.arange(n)), strict=True):
        codes = time_split_codes(times.as_unit("ns").asi8, fold.split())
        np.testing.assert_array_equal(np.flatnonzero(codes <= 1), train)  # train + validation
        np.testing.assert_array_equal(np.flatnonzero(codes == 2), test)


def windows_of_fold(times_ns, codes, lookback, horizon, *, purge=True):
    symbols = np.zeros(len(times_ns), dtype=np.int64)
    finite = np.ones(len(times_ns), dtype=bool)
    if purge:
        index = index_windows(
            symbols, codes, times_ns, finite, lookback=lookback, horizon=horizon, max_gap_ns=None
        )
        anchors = np.concatenate([index.anchors["train"], index.anchors["validation"]])
    else:  # the planted leak: windows cut without the split boundaries
        starts = segment_starts(symbols)
        anchors = valid_anchors(starts, finite, lookback=lookback, horizon=horizon)
        anchors = anchors[codes[anchors] <= 1]
    return times_ns[anchors[:, None] + np.arange(1, horizon + 1)]


@st.composite
def bars_and_folds(draw):
    n = draw(st.integers(60, 400))
    steps = draw(st.lists(st.sampled_from([1, 1, 1, 2, 13]), min_size=n, max_size=n))
    times = pd.DatetimeIndex(
        pd.Timestamp("2024-03-04 09:30", tz="America/New_York") + SPACING * np.cumsum(steps)
    )
    folds = draw(st.integers(1, 4))
    size = draw(st.one_of(st.integers(3, max(3, n // (folds + 2))), st.just(None)))
    return (
        times,
        {
            "folds": folds,
            "scheme": draw(st.sampled_from(["expanding", "rolling"])),
            "test_size": size,
            "embargo": SPACING * draw(st.integers(0, 12)),
            "val_fraction": draw(st.sampled_from([0.0, 0.15, 0.3])),
        },
        draw(st.integers(1, 6)),
        draw(st.integers(1, 6)),
    )


@settings(max_examples=150, deadline=None)
@given(bars_and_folds())
def test_no_training_target_in_a_later_test_span_or_embargo(case) -> None:
    times, kwargs, lookback, horizon = case
    folds = cut_folds(times, **kwargs)
    for k, fold in enumerate(folds):
        codes = time_split_codes(times.as_unit("ns").asi8, fold.split())
        targets = windows_of_fold(times.as_unit("ns").asi8, codes, lookback, horizon)
        assert leaking_targets(targets, folds, k) == 0
        # and the rows themselves: nothing of training at or after the embargo start
        assert (times.as_unit("ns").asi8[codes <= 1] < fold.embargo_start.value).all()
        assert not ((codes == 2) & (times.as_unit("ns").asi8 < fold.test_start.value)).any()
        assert UNUSED not in codes[(times.as_unit("ns").asi8 >= fold.test_start.value) &
                                   (codes != 2)] or fold.test_end is not None  # fmt: skip


def test_a_planted_leak_is_caught() -> None:
    times = even_times(300)
    folds = cut_folds(times, folds=3, test_size=40, embargo=2 * SPACING, val_fraction=0.1)
    for k, fold in enumerate(folds):
        codes = time_split_codes(times.as_unit("ns").asi8, fold.split())
        sound = windows_of_fold(times.as_unit("ns").asi8, codes, 8, 4)
        leaky = windows_of_fold(times.as_unit("ns").asi8, codes, 8, 4, purge=False)
        assert leaking_targets(sound, folds, k) == 0
        # windows anchored just before the embargo see bars of the embargo and the test span
        assert leaking_targets(leaky, folds, k) > 0


def test_bad_fold_settings_are_one_clear_error() -> None:
    from foxhunt.errors import ConfigError

    with pytest.raises(ConfigError, match="no training"):
        cut_folds(even_times(50), folds=5, test_size=10)
