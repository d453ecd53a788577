"""Bars read a symbol at a time for the streamed feature store (data/symbol_reader.py,
data/streamed_bars.py): never the whole raw frame, and the entry the in-memory preparation
writes, bit for bit, whatever order the rows and files come in."""

from pathlib import Path

import pandas as pd
import pytest
from test_feature_store import assert_same_windows
from test_streamed import SYMBOLS, config

from foxhunt.data import prepare_data
from foxhunt.data import symbol_reader as reader_module
from foxhunt.data.instruments import generate_instruments
from foxhunt.data.pipeline import prepare_in_memory
from foxhunt.errors import DataError


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return generate_instruments(days=3, seed=5, symbols=SYMBOLS, bar_minutes=5)


@pytest.fixture
def chunks(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The symbols of each chunk read; reading the whole frame fails the test."""
    seen: list[set[str]] = []
    read = reader_module.read_source

    def one(*args, **kwargs):  # type: ignore[no-untyped-def]
        chunk = read(*args, **kwargs)
        seen.append(set(chunk["symbol"]))
        return chunk

    def whole(*args: object) -> None:
        raise AssertionError("read the whole frame")

    monkeypatch.setattr(reader_module, "read_source", one)
    monkeypatch.setattr(reader_module, "load_frame", whole)
    return seen


def _same(bars: Path, store: Path, chunks: list[set[str]], **changes: object) -> None:
    memory = prepare_in_memory(config(bars, None, **changes))
    stored = prepare_data(config(bars, store, **changes))
    assert_same_windows(memory, stored)
    assert chunks == [{s} for s in sorted(memory.preprocessor.symbols.categories)]


def test_an_interleaved_file_is_read_a_symbol_at_a_time_bit_for_bit(
    frame: pd.DataFrame, tmp_path: Path, chunks: list[set[str]]
) -> None:
    bars = tmp_path / "bars.parquet"
    # rows interleaved by symbol and out of time order, in small row groups
    frame.sample(frac=1.0, random_state=1).to_parquet(bars, index=False, row_group_size=500)
    _same(bars, tmp_path / "store", chunks)
    chunks.clear()
    _same(bars, tmp_path / "some", chunks, symbols=("CL", "ZN"), start="2025-01-06 12:00")


def test_a_folder_of_files_is_read_a_symbol_at_a_time_bit_for_bit(
    frame: pd.DataFrame, tmp_path: Path, chunks: list[set[str]]
) -> None:
    folder = tmp_path / "bars"
    folder.mkdir()
    frame = frame.astype({"symbol": "category"})  # stored as a Parquet dictionary
    days = frame["timestamp"].dt.day
    for day in days.unique():  # a file a day, each holding every symbol
        frame[days == day].to_parquet(folder / f"{day}.parquet", index=False)
    _same(folder, tmp_path / "store", chunks)


def test_a_bad_bar_or_an_empty_symbol_names_its_file_and_column(
    frame: pd.DataFrame, tmp_path: Path, chunks: list[set[str]]
) -> None:
    bars = tmp_path / "bars.parquet"
    bad = frame.copy()
    bad.loc[bad.index[-5], "high"] = 0.5 * bad.loc[bad.index[-5], "low"]  # in ZN's rows
    bad.to_parquet(bars, index=False)
    with pytest.raises(DataError, match=rf"{bars}: high < low at row \d+ \(.*symbol 'ZN'\)"):
        prepare_data(config(bars, tmp_path / "store"))
    empty = frame.astype({"symbol": object})
    empty.loc[[7, 9], "symbol"] = None
    empty.to_parquet(bars, index=False)
    with pytest.raises(DataError, match=rf"{bars}: column 'symbol' is empty at row 7 \(2 rows\)"):
        prepare_data(config(bars, tmp_path / "store"))
