"""The input matrix filled, trimmed and scaled in place (features/matrix.py, scaling.py):
the same numbers as the copies it replaced."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli.presets import TFT225_FEATURES
from foxhunt.data import DataConfig, prepare_data
from foxhunt.data.features.bars import rolling
from foxhunt.data.features.matrix import compact_columns, finite_rows, write_columns
from foxhunt.data.scaling import StandardScaler
from foxhunt.data.sources import read_source


@pytest.mark.parametrize("dropped", [[0], [4], [9], [0, 3, 4, 9], []])
def test_compact_columns_is_the_column_selection_in_place(dropped: list[int]) -> None:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(70_001, 10)).astype(np.float32)  # over two blocks of rows
    keep = np.ones(10, dtype=bool)
    keep[dropped] = False
    expected = matrix[:, keep].copy()
    got = compact_columns(matrix, keep)
    np.testing.assert_array_equal(got, expected)
    assert np.shares_memory(got, matrix)


def test_write_columns_and_finite_rows() -> None:
    rng = np.random.default_rng(1)
    columns = [rng.normal(size=5_000) for _ in range(7)]
    columns[3][[5, 4_999]] = np.nan
    out = np.empty((5_000, 7), dtype=np.float32)
    write_columns(out, columns)
    np.testing.assert_array_equal(out, np.column_stack(columns).astype(np.float32))
    np.testing.assert_array_equal(finite_rows(out), np.isfinite(out).all(axis=1))


def test_scaling_in_place_and_fitting_on_rows_match_the_copies() -> None:
    rng = np.random.default_rng(2)
    values = (rng.normal(size=(40_000, 6)) * [1, 10, 1e3, 0.1, 5, 1]).astype(np.float32)
    codes = np.repeat(np.arange(3), [10_000, 25_000, 5_000])
    train = rng.random(40_000) < 0.7
    train[35_000:] = False  # symbol 2 has no training rows: all symbols' statistics
    on_rows = StandardScaler.fit("abcdef", values, codes, 3, rows=train)
    assert on_rows == StandardScaler.fit("abcdef", values[train], codes[train], 3)
    one_set = StandardScaler.fit("abcdef", values, rows=train)
    for scaler in (on_rows, one_set):
        expected = scaler.transform(values, codes=codes)
        np.testing.assert_array_equal(scaler.scale_in_place(values.copy(), codes), expected)


@pytest.mark.parametrize("how", ["max", "min"])
def test_rolling_extremes_are_pandas(how: str) -> None:
    x = np.cumsum(np.random.default_rng(3).normal(size=3_000))
    for window in (1, 2, 3, 48, 2_999, 3_000, 3_001):
        expected = pd.Series(x).rolling(window, min_periods=window).agg(how).to_numpy()
        np.testing.assert_array_equal(rolling(x, window, how), expected)


def test_the_es_windows_are_the_unscaled_inputs_scaled(es_parquet: Path) -> None:
    """tft-225 on the real ES bars: the windows (the inputs written group by group into one
    matrix and scaled in place) equal a fresh encoding of the file with the saved spec,
    scaled by the copying transform."""
    config = DataConfig(path=es_parquet, lookback=64, horizon=8, feature_groups=TFT225_FEATURES)
    data = prepare_data(config)
    pre = data.preprocessor
    encoded = pre.encode(read_source(es_parquet), min_rows=72)
    expected = pre.scaler.transform(encoded.features.inputs, codes=encoded.symbol_codes)
    assert expected.shape[1] == len(data.schema.past_names) >= 229
    np.testing.assert_array_equal(data.train.past_values.numpy(), expected)
