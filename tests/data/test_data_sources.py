"""Folders and globs of Parquet files, and the time/symbol filters pushed down to the reader."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import DataConfig, PreparedData, generate_bars, prepare_data
from foxhunt.data.sources import RowFilter, apply_filter, read_source, source_files
from foxhunt.errors import ConfigError, DataError

SMALL = {
    "lookback": 16,
    "horizon": 4,
    "volatility_windows": (6, 12),
    "baseline_window": 16,
    "fast_window": 8,
}


@pytest.fixture(scope="module")
def two_symbols() -> pd.DataFrame:
    return generate_bars(days=8, seed=5, symbols=("ES", "NQ"))


@pytest.fixture(scope="module")
def daily(two_symbols: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bars as a single file and as a folder of one file per calendar day."""
    root = tmp_path_factory.mktemp("bars")
    two_symbols.to_parquet(root / "all.parquet")
    folder = root / "daily"
    folder.mkdir()
    day = two_symbols["timestamp"].dt.date
    for when, part in two_symbols.groupby(day):
        part.to_parquet(folder / f"{when}.parquet", index=False)
    return root


def same_windows(a: PreparedData, b: PreparedData) -> None:
    for name in ("train", "validation", "test"):
        x, y = getattr(a, name), getattr(b, name)
        assert len(x) > 0
        for field in ("anchors", "past_values", "target_values", "base_volatility"):
            np.testing.assert_array_equal(getattr(x, field).numpy(), getattr(y, field).numpy())
        assert x.timestamps.equals(y.timestamps)
    assert a.preprocessor.scaler == b.preprocessor.scaler


def test_a_folder_of_daily_files_gives_the_windows_of_the_single_file(daily: Path) -> None:
    assert len(source_files(daily / "daily")) >= 8
    single = prepare_data(DataConfig(path=daily / "all.parquet", **SMALL))
    folder = prepare_data(DataConfig(path=daily / "daily", **SMALL))
    glob = prepare_data(DataConfig(path=daily / "daily" / "*.parquet", **SMALL))
    same_windows(single, folder)
    same_windows(single, glob)


@pytest.mark.parametrize("source", ["all.parquet", "daily", "daily/2025-0*.parquet"])
def test_filters_equal_filtering_the_frame(
    daily: Path, two_symbols: pd.DataFrame, tmp_path: Path, source: str
) -> None:
    start, end = "2025-01-07 09:30", "2025-01-14 12:00"  # naive: America/New_York
    config = DataConfig(path=daily / source, start=start, end=end, symbols=("NQ",), **SMALL)
    times = two_symbols["timestamp"]
    expected = two_symbols[
        (times >= pd.Timestamp(start, tz="America/New_York"))
        & (times < pd.Timestamp(end, tz="America/New_York"))
        & (two_symbols["symbol"] == "NQ")
    ]
    expected.to_parquet(tmp_path / "expected.parquet")
    same_windows(
        prepare_data(config), prepare_data(DataConfig(path=tmp_path / "expected.parquet", **SMALL))
    )


def test_filters_on_csv_and_naive_parquet(two_symbols: pd.DataFrame, tmp_path: Path) -> None:
    naive = two_symbols.assign(timestamp=two_symbols["timestamp"].dt.tz_localize(None))
    naive.to_csv(tmp_path / "b.csv", index=False)
    naive.to_parquet(tmp_path / "b.parquet")
    bounds = RowFilter(
        start=pd.Timestamp("2025-01-08 14:00", tz="UTC"), symbols=("ES",)
    )  # an aware bound against naive exchange-time bars
    want = apply_filter(read_source(tmp_path / "b.csv"), bounds)
    assert len(want) and want["timestamp"].min() >= bounds.start
    for name in ("b.csv", "b.parquet"):
        got = read_source(tmp_path / name, bounds=bounds)
        assert got["timestamp"].equals(want["timestamp"]) and set(got["symbol"]) == {"ES"}


def test_errors_name_the_path(two_symbols: pd.DataFrame, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match=r"empty: data file is a folder holding no \.parquet"):
        read_source(empty)
    with pytest.raises(DataError, match="glob matches no file"):
        read_source(tmp_path / "nothing-*.parquet")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    two_symbols.iloc[:100].to_parquet(mixed / "a.parquet")
    other = two_symbols.iloc[100:200].assign(volume=lambda f: f["volume"].astype(str))
    other.to_parquet(mixed / "b.parquet")
    with pytest.raises(DataError, match=r"b.parquet: its columns differ from a.parquet's \(volume"):
        read_source(mixed)
    (mixed / "b.parquet").unlink()
    (mixed / "c.parquet").write_text("timestamp,open\n")  # a CSV under a Parquet name
    with pytest.raises(DataError, match=r"c\.parquet: not a Parquet file"):
        read_source(mixed)
    with pytest.raises(DataError, match="no bar passes the filter"):
        read_source(mixed / "a.parquet", bounds=RowFilter(symbols=("CL",)))
    with pytest.raises(ConfigError, match=r"DataConfig\.end"):
        DataConfig(start="2025-01-09", end="2025-01-08")
    with pytest.raises(ConfigError, match=r"DataConfig\.start"):
        DataConfig(start="not a time")


@pytest.mark.parametrize("naive", [False, True])
def test_the_filters_are_pushed_down_to_the_reader(
    two_symbols: pd.DataFrame, tmp_path: Path, naive: bool
) -> None:
    import pyarrow.dataset as pads

    from foxhunt.data.sources import _expression, _timestamp_field

    bars = two_symbols
    if naive:  # exchange-time bars without a zone, as many vendors write them
        bars = bars.assign(timestamp=bars["timestamp"].dt.tz_localize(None))
    bars.to_parquet(tmp_path / "b.parquet")
    dataset = pads.dataset(str(tmp_path / "b.parquet"))
    bounds = RowFilter(
        start=pd.Timestamp("2025-01-08 09:30", tz="America/New_York"),
        end=pd.Timestamp("2025-01-09 16:00", tz="America/New_York"),
        symbols=("ES",),
    )
    ts = _timestamp_field(dataset.schema, None)
    expr, left = _expression(dataset.schema, bounds, ts, "symbol", None)
    assert expr is not None and left.empty  # nothing is left to filter in pandas
    read = dataset.to_table(filter=expr).num_rows
    assert read == len(apply_filter(read_source(tmp_path / "b.parquet"), bounds)) > 0
