"""benchmarks/planted_learning.py: its TFT-minus-best column (the no-driver market's check) is
the tables' mean QL difference, and its interval resamples whole days."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "planted_learning.py"
LEVELS = (0.1, 0.5, 0.9)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("planted_learning", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def forecasts(days: int, per_day: int, tft_offset: np.ndarray) -> pd.DataFrame:
    """A test_forecasts.parquet's columns: the baseline's quantiles exact for a known y, the
    TFT's shifted by `tft_offset` per row."""
    rng = np.random.default_rng(1)
    n = days * per_day
    start = pd.Timestamp("2025-03-03 10:00", tz="America/New_York")
    origin = [start + pd.Timedelta(days=i // per_day, minutes=5 * (i % per_day)) for i in range(n)]
    frame = pd.DataFrame({"origin": origin, "realized_bp": rng.normal(size=n)})
    for level in LEVELS:
        frame[f"ewma:q{level:g}"] = 0.0
        frame[f"q{level:g}"] = tft_offset
    return frame


def pinball_of_offset(y: np.ndarray, offset: np.ndarray) -> np.ndarray:
    out = np.zeros(len(y))
    for level in LEVELS:
        e = y - offset
        out += np.maximum(level * e, (level - 1) * e)
    return out / len(LEVELS)


def test_the_difference_is_the_mean_ql_difference(bench: ModuleType, tmp_path: Path) -> None:
    frame = forecasts(20, 10, np.full(200, 0.3))
    frame.to_parquet(tmp_path / "test_forecasts.parquet")
    y = frame["realized_bp"].to_numpy()
    want = (pinball_of_offset(y, np.full(200, 0.3)) - pinball_of_offset(y, np.zeros(200))).mean()
    text = bench.difference(tmp_path, "ewma")
    assert text.startswith(f"{want:+.4f} [")
    low, high = (float(x) for x in text.split("[")[1].rstrip("]").split(","))
    assert low < want < high


def test_the_interval_resamples_days_not_rows(bench: ModuleType, tmp_path: Path) -> None:
    # the TFT's offset is constant within a day and varies between days: resampling days sees
    # the spread between days, so the interval is wider than one that resampled rows would be
    days, per_day = 30, 50
    offset = np.repeat(np.random.default_rng(2).normal(scale=0.5, size=days), per_day)
    frame = forecasts(days, per_day, offset)
    frame.to_parquet(tmp_path / "test_forecasts.parquet")
    low, high = (float(x) for x in bench.difference(tmp_path, "ewma").split("[")[1][:-1].split(","))
    y = frame["realized_bp"].to_numpy()
    diff = pinball_of_offset(y, offset) - pinball_of_offset(y, np.zeros(len(y)))
    row_se = diff.std() / np.sqrt(len(diff))
    assert high - low > 2 * 1.96 * row_se * 1.5
