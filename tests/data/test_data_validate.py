import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import read_bars, validate_bars
from foxhunt.errors import DataError


def check(frame: pd.DataFrame, *, min_rows: int = 1, **kwargs: object) -> pd.DataFrame:
    return validate_bars(frame, source="bars.csv", min_rows=min_rows, **kwargs)


def test_valid_bars_pass_unchanged(bars: pd.DataFrame) -> None:
    out = check(bars)
    pd.testing.assert_frame_equal(out, bars, check_dtype=False)
    assert out.attrs["source"] == "bars.csv"


def test_missing_columns_are_named_with_the_columns_found(bars: pd.DataFrame) -> None:
    with pytest.raises(
        DataError,
        match=r"bars\.csv: missing column\(s\) \['close', 'volume'\]; columns found: \['timestamp', 'open', 'high', 'low', 'symbol'\]",
    ):
        check(bars.drop(columns=["close", "volume"]))


def test_missing_file_column_names_the_file(bars: pd.DataFrame, tmp_path: Path) -> None:
    bars.drop(columns="low").to_csv(tmp_path / "no_low.csv", index=False)
    with pytest.raises(DataError, match=r"no_low\.csv: missing column\(s\) \['low'\]"):
        read_bars(tmp_path / "no_low.csv")


def test_non_numeric_column(bars: pd.DataFrame) -> None:
    frame = bars.astype({"high": object})
    frame.loc[7, "high"] = "n/a"
    with pytest.raises(
        DataError,
        match=r"column 'high' is not numeric .*row 7 \(2025-01-05 18:35:00-05:00, symbol 'ES'\) holds 'n/a'",
    ):
        check(frame)


def test_numeric_strings_are_accepted(bars: pd.DataFrame) -> None:
    out = check(bars.astype({"volume": str}))
    assert out["volume"].dtype == np.float64


@pytest.mark.parametrize(("column", "value"), [("close", np.nan), ("volume", np.inf)])
def test_nan_or_inf_names_column_row_and_time(
    bars: pd.DataFrame, column: str, value: float
) -> None:
    frame = bars.astype({column: np.float64})
    frame.loc[[5, 9], column] = value
    with pytest.raises(
        DataError,
        match=rf"column '{column}' has a missing or infinite value \({value}\) at row 5 \(2025-01-05 18:25:00-05:00",
    ):
        check(frame)


def test_high_below_low_names_first_time(bars: pd.DataFrame) -> None:
    frame = bars.copy()
    frame.loc[[12, 40], "high"] = frame.loc[[12, 40], "low"] - 1
    with pytest.raises(DataError, match=r"high < low at row 12 \(2025-01-05 19:00:00-05:00"):
        check(frame)


def test_negative_volume(bars: pd.DataFrame) -> None:
    frame = bars.copy()
    frame.loc[3, "volume"] = -1
    with pytest.raises(
        DataError, match=r"column 'volume' is negative \(-1\.0\) at row 3 \(2025-01-05 18:15"
    ):
        check(frame)


def test_non_positive_price(bars: pd.DataFrame) -> None:
    frame = bars.copy()
    frame.loc[4, ["low", "open"]] = 0.0
    with pytest.raises(DataError, match=r"column 'open' is not positive .* row 4"):
        check(frame)


def test_conflicting_duplicate_names_symbol_time_and_columns(bars: pd.DataFrame) -> None:
    """The same bar twice with different values: which one was meant cannot be known."""
    twice = bars.iloc[[20, 30]].assign(close=bars["low"].iloc[[20, 30]].to_numpy())
    frame = pd.concat([bars, twice], ignore_index=True)
    with pytest.raises(
        DataError,
        match=r"bars\.csv: two different bars for symbol 'ES' at 2025-01-05 19:40:00-05:00 "
        rf"\(rows 20 and {len(bars)} differ in \['close'\]\)",
    ):
        check(frame)


def test_exact_duplicates_are_dropped_with_one_warning(
    bars: pd.DataFrame, data_log: pytest.LogCaptureFixture
) -> None:
    frame = pd.concat([bars, bars.iloc[[20, 30, 30]]], ignore_index=True)
    out = check(frame)
    pd.testing.assert_frame_equal(out, bars, check_dtype=False)
    lines = sorted({r.getMessage() for r in data_log.records if r.levelno >= logging.WARNING})
    assert len(lines) == 1 and "dropped 3 exact duplicate bar(s)" in lines[0], lines


def test_a_duplicate_differing_only_in_an_extra_column_is_refused(bars: pd.DataFrame) -> None:
    frame = bars.assign(note="a")
    frame = pd.concat([frame, frame.iloc[[5]].assign(note="b")], ignore_index=True)
    with pytest.raises(DataError, match=r"differ in \['note'\]"):
        check(frame)


def test_same_time_in_two_symbols_is_fine(bars: pd.DataFrame) -> None:
    out = check(pd.concat([bars, bars.assign(symbol="NQ")], ignore_index=True))
    assert list(out["symbol"].unique()) == ["ES", "NQ"]


def test_too_few_rows_per_symbol(bars: pd.DataFrame) -> None:
    frame = pd.concat([bars, bars.iloc[:50].assign(symbol="NQ")], ignore_index=True)
    with pytest.raises(
        DataError, match=r"72 per symbol are needed \(lookback \+ horizon\), found 'NQ': 50"
    ):
        check(frame, min_rows=72)


def test_unsorted_rows_are_sorted_with_a_warning(
    bars: pd.DataFrame, data_log: pytest.LogCaptureFixture
) -> None:
    shuffled = bars.sample(frac=1.0, random_state=0)
    out = check(shuffled)
    assert out["timestamp"].is_monotonic_increasing
    pd.testing.assert_frame_equal(out, bars, check_dtype=False)
    warnings = [r for r in data_log.records if r.levelno == logging.WARNING]
    assert warnings and "not in time order" in warnings[0].getMessage()
    assert warnings[0].name == "foxhunt.data"


def test_symbols_sorted_by_time_are_not_unsorted(
    bars: pd.DataFrame, data_log: pytest.LogCaptureFixture
) -> None:
    interleaved = pd.concat([bars, bars.assign(symbol="NQ")]).sort_values(
        "timestamp", kind="stable"
    )
    out = check(interleaved)
    assert not [r for r in data_log.records if r.levelno >= logging.WARNING]
    assert (out["symbol"].iloc[: len(bars)] == "ES").all()


def test_caller_frame_is_never_mutated(bars: pd.DataFrame) -> None:
    frame = bars.sample(frac=1.0, random_state=1).astype({"volume": str})
    before = frame.copy()
    check(frame)
    pd.testing.assert_frame_equal(frame, before)


def test_extra_columns_must_exist_and_be_finite(bars: pd.DataFrame) -> None:
    with pytest.raises(DataError, match=r"missing column\(s\) \['spread'\]"):
        check(bars, extra_columns=("spread",))
    frame = bars.assign(spread=1.0)
    frame.loc[2, "spread"] = np.nan
    with pytest.raises(
        DataError, match=r"column 'spread' has a missing or infinite value .* row 2"
    ):
        check(frame, extra_columns=("spread",))


def test_symbol_defaults_when_absent(bars: pd.DataFrame) -> None:
    assert set(check(bars.drop(columns="symbol"))["symbol"]) == {"default"}
