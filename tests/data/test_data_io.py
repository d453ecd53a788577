from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import read_bars
from foxhunt.errors import DataError


def test_csv_and_parquet_give_the_same_frame(bars: pd.DataFrame, tmp_path: Path) -> None:
    bars.to_parquet(tmp_path / "bars.parquet")
    bars.to_csv(tmp_path / "bars.csv", index=False)
    bars.to_csv(tmp_path / "bars.csv.gz", index=False)
    from_parquet = read_bars(tmp_path / "bars.parquet")
    for name in ("bars.csv", "bars.csv.gz"):
        from_csv = read_bars(tmp_path / name)
        pd.testing.assert_frame_equal(from_csv, from_parquet, check_dtype=False)
        assert from_csv["timestamp"].equals(from_parquet["timestamp"])


def test_real_es_csv_naive_equals_parquet_tz_aware(es_csv: Path, es_parquet: Path) -> None:
    from_csv = read_bars(es_csv, timezone="America/New_York")
    from_parquet = read_bars(es_parquet)
    assert len(from_csv) == len(from_parquet) == 13_768
    assert (from_csv["timestamp"] == from_parquet["timestamp"]).all()
    cols = ["open", "high", "low", "close", "volume"]
    np.testing.assert_array_equal(from_csv[cols].to_numpy(), from_parquet[cols].to_numpy())


def test_normalized_columns_and_types(bars: pd.DataFrame, tmp_path: Path) -> None:
    frame = bars.drop(columns="symbol").rename(columns={"timestamp": "Date", "close": "Close"})
    frame["spread"] = 0.25
    frame.to_parquet(tmp_path / "b.pq")
    out = read_bars(tmp_path / "b.pq")
    assert list(out.columns) == [
        *("timestamp", "open", "high", "low", "close", "volume", "symbol", "spread")
    ]
    assert set(out["symbol"]) == {"default"}
    assert out["volume"].dtype == np.float64


def test_naive_timestamps_are_localized(bars: pd.DataFrame, tmp_path: Path) -> None:
    naive = bars.assign(timestamp=bars["timestamp"].dt.tz_localize(None))
    naive.to_csv(tmp_path / "naive.csv", index=False)
    chicago = read_bars(tmp_path / "naive.csv", timezone="America/Chicago")
    assert str(chicago["timestamp"].dt.tz) == "America/Chicago"
    assert chicago["timestamp"].dt.hour.iloc[0] == bars["timestamp"].dt.hour.iloc[0]
    default = read_bars(tmp_path / "naive.csv")  # exchange time unless told otherwise
    assert default["timestamp"].equals(
        read_bars(tmp_path / "naive.csv", timezone=None)["timestamp"]
    )
    assert str(default["timestamp"].dt.tz) == "America/New_York"


def test_tz_aware_timestamps_are_converted(bars: pd.DataFrame, tmp_path: Path) -> None:
    bars.assign(timestamp=bars["timestamp"].dt.tz_convert("UTC")).to_parquet(tmp_path / "u.pq")
    kept = read_bars(tmp_path / "u.pq")
    assert str(kept["timestamp"].dt.tz) == "UTC"
    eastern = read_bars(tmp_path / "u.pq", timezone="America/New_York")
    assert (eastern["timestamp"] == bars["timestamp"]).all()


def test_csv_with_utc_offsets_across_dst(tmp_path: Path) -> None:
    text = "time,open,high,low,close,volume\n"
    text += "2026-03-06 16:55:00-05:00,1,2,1,2,5\n2026-03-08 18:05:00-04:00,2,3,1,2,5\n"
    (tmp_path / "offsets.csv").write_text(text)
    out = read_bars(tmp_path / "offsets.csv", timezone="America/New_York")
    assert list(out["timestamp"].dt.hour) == [16, 18]


def test_explicit_timestamp_and_symbol_columns(bars: pd.DataFrame, tmp_path: Path) -> None:
    bars.rename(columns={"timestamp": "bar_end", "symbol": "ticker"}).to_parquet(tmp_path / "b.pq")
    out = read_bars(tmp_path / "b.pq", timestamp_column="bar_end", symbol_column="ticker")
    assert set(out["symbol"]) == {"ES"}
    with pytest.raises(DataError, match=r"timestamp column 'when' not found; columns found: \["):
        read_bars(tmp_path / "b.pq", timestamp_column="when")


def test_no_timestamp_column(bars: pd.DataFrame, tmp_path: Path) -> None:
    bars.rename(columns={"timestamp": "stamp"}).to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(
        DataError, match=r"b\.csv: no timestamp column .*'stamp'.*--timestamp-column"
    ):
        read_bars(tmp_path / "b.csv")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"nope\.parquet: file not found"):
        read_bars(tmp_path / "nope.parquet")


def test_not_a_parquet_file(tmp_path: Path) -> None:
    (tmp_path / "bars.parquet").write_text("timestamp,open\n2026-01-01,1\n")
    with pytest.raises(DataError, match=r"bars\.parquet: not a Parquet/CSV file"):
        read_bars(tmp_path / "bars.parquet")


def test_binary_file_named_csv(bars: pd.DataFrame, tmp_path: Path) -> None:
    bars.to_parquet(tmp_path / "bars.csv")
    with pytest.raises(DataError, match=r"bars\.csv: not a Parquet/CSV file"):
        read_bars(tmp_path / "bars.csv")


def test_unparseable_timestamps(tmp_path: Path) -> None:
    text = "timestamp,open,high,low,close,volume\n2026-01-01 09:30,1,2,1,2,5\nsoon,1,2,1,2,5\n"
    (tmp_path / "b.csv").write_text(text)
    with pytest.raises(
        DataError, match=r"column 'timestamp' has values that are not timestamps \(row 1: 'soon'\)"
    ):
        read_bars(tmp_path / "b.csv")


def test_text_with_bare_offsets_becomes_exchange_time(tmp_path: Path) -> None:
    text = "time,open,high,low,close,volume\n"
    text += "2026-03-06 16:55:00-05:00,1,2,1,2,5\n2026-03-08 18:05:00-04:00,2,3,1,2,5\n"
    (tmp_path / "offsets.csv").write_text(text)
    out = read_bars(tmp_path / "offsets.csv")
    assert str(out["timestamp"].dt.tz) == "America/New_York"
    assert list(out["timestamp"].dt.hour) == [16, 18]
