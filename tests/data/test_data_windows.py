import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from foxhunt.data.windows import NO_CUT, index_windows, split_codes, split_cuts


def brute_force_anchors(
    symbols: np.ndarray,
    splits: np.ndarray,
    times: np.ndarray,
    finite: np.ndarray,
    lookback: int,
    horizon: int,
    max_gap: int | None,
) -> list[int]:
    """The validity rule, one window at a time."""
    valid = []
    for t in range(len(symbols)):
        rows = list(range(t - lookback + 1, t + horizon + 1))
        if rows[0] < 0 or rows[-1] >= len(symbols):
            continue
        if len({symbols[r] for r in rows}) > 1 or len({splits[r] for r in rows}) > 1:
            continue
        if not all(finite[r] for r in rows):
            continue
        if max_gap is not None and any(
            times[b] - times[a] > max_gap for a, b in itertools.pairwise(rows)
        ):
            continue
        valid.append(t)
    return valid


@st.composite
def series(draw: st.DrawFn) -> dict:
    """Up to 40 rows of up to 3 symbols, random spacing, split cut times and NaN rows."""
    n = draw(st.integers(1, 40))
    rows = st.lists(st.integers(0, 2), min_size=n, max_size=n)
    symbols = np.sort(np.array(draw(rows)))
    steps = draw(st.lists(st.sampled_from([1, 1, 1, 2, 5]), min_size=n, max_size=n))
    times = np.cumsum(steps).astype(np.int64)
    cuts = sorted(draw(st.lists(st.integers(0, int(times[-1]) + 1), min_size=2, max_size=2)))
    finite = draw(st.lists(st.sampled_from([True, True, True, False]), min_size=n, max_size=n))
    return {
        "symbols": symbols,
        "splits": ((times >= cuts[0]).astype(np.int8) + (times >= cuts[1])).astype(np.int8),
        "times": times,
        "finite": np.array(finite),
        "lookback": draw(st.integers(1, 5)),
        "horizon": draw(st.integers(1, 4)),
        "max_gap": draw(st.sampled_from([None, 1, 2, 4])),
    }


@settings(max_examples=300, deadline=None)
@given(series())
def test_valid_anchors_match_brute_force(case: dict) -> None:
    index = index_windows(
        case["symbols"],
        case["splits"],
        case["times"],
        case["finite"],
        lookback=case["lookback"],
        horizon=case["horizon"],
        max_gap_ns=case["max_gap"],
    )
    found = np.sort(np.concatenate(list(index.anchors.values())))
    expected = brute_force_anchors(**case)
    assert found.tolist() == expected
    for code, anchors in enumerate(index.anchors.values()):
        assert (case["splits"][anchors] == code).all()
    ignoring_gaps = brute_force_anchors(**{**case, "max_gap": None})
    assert index.dropped_for_gaps == len(ignoring_gaps) - len(expected)


def test_split_cuts_share_time_across_symbols() -> None:
    times = np.concatenate([np.arange(100), np.arange(50, 100)]).astype(np.int64)
    cuts = split_cuts(times, 0.2, 0.1)
    assert cuts.tolist() == [70, 90]
    codes = split_codes(times, cuts)
    assert (codes[:100][:70] == 0).all() and (codes[:100][70:90] == 1).all()
    assert (codes[100:][times[100:] >= 90] == 2).all()


def test_zero_fractions_mean_no_split() -> None:
    times = np.arange(10, dtype=np.int64)
    assert split_cuts(times, 0.0, 0.0).tolist() == [NO_CUT, NO_CUT]
    assert split_cuts(times, 0.0, 0.2).tolist() == [8, 8]
    assert split_cuts(times, 0.2, 0.0).tolist() == [8, NO_CUT]
