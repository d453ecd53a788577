"""Hostile bars found by the sweep of issue 42, each refused with one line or warned about."""

from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data import generate_bars

from .helpers import SMALL, refused


def test_a_symbol_without_training_bars_is_refused(tmp_path: Path) -> None:
    """NQ trading only in the test span was kept with every symbol's scaler statistics and an
    untrained embedding, and forecast without a word."""
    late = generate_bars(days=6, seed=2).assign(symbol="NQ").iloc[-150:]
    bars = tmp_path / "late.parquet"
    pd.concat([generate_bars(days=6, seed=1), late]).to_parquet(bars)
    first = str(late["timestamp"].iloc[0])
    args = ["train", "--parquet-file", bars, *SMALL, "--output-dir", tmp_path / "run"]
    refused(args, "late.parquet", "symbol 'NQ' has no training bar", first, "--symbols")
    assert not (tmp_path / "run").exists()


def test_contracts_taking_turns_bar_after_bar_are_refused(tmp_path: Path) -> None:
    """A contract column switching codes on every bar made two series with gaps at every other
    bar: the bar spacing doubled and thousands of windows were dropped in silence."""
    bars = generate_bars(days=6, seed=1)
    bars["contract"] = np.where(np.arange(len(bars)) % 2, "ESH5", "ESM5")
    path = tmp_path / "turns.parquet"
    bars.to_parquet(path)
    args = ["train", "--parquet-file", path, *SMALL, "--output-dir", tmp_path / "run"]
    refused(args, "turns.parquet", "symbol 'ES' changes contract", "'ESM5' -> 'ESH5'", "'contract'")
    refused(["inspect", path], "turns.parquet", "take turns bar after bar")
