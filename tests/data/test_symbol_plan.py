"""The windows and preprocessor of a streamed feature store entry fitted a symbol at a time
(data/symbol_plan.py): numpy's numbers without a vector of every bar, so the preparation's
working set does not grow with the number of symbols."""

import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import DataConfig, prepare_data, scaling
from foxhunt.data import feature_store as store_module
from foxhunt.data.instruments import generate_instruments
from foxhunt.data.pipeline import prepare_in_memory
from foxhunt.data.scaling import TargetScaler, pairwise_mean_square
from foxhunt.data.volatility import IntradayProfile
from foxhunt.errors import DataError


def _bars(path: Path, symbols: int, days: int = 2) -> Path:
    """`symbols` copies of one instrument (other seeds, other names): every symbol as long."""
    frames = []
    for i in range(symbols):
        frame = generate_instruments(days=days, seed=i, symbols=("ES",), bar_minutes=5)
        frames.append(frame.assign(symbol=f"S{i}"))
    pd.concat(frames, ignore_index=True).to_parquet(path, index=False)
    return path


def _config(bars: Path, store: Path | None) -> DataConfig:
    return DataConfig(
        path=bars, lookback=16, horizon=4, feature_groups=("returns:3/12", "realized:3/12"),
        feature_store=None if store is None else str(store), calendar="none",
    )  # fmt: skip


def test_the_preparation_holds_no_more_for_more_symbols(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peaks: list[int] = []
    write = store_module.write_streamed

    def traced(*args, **kwargs):  # type: ignore[no-untyped-def]
        tracemalloc.start()  # numpy's buffers are traced: every array the preparation holds
        try:
            return write(*args, **kwargs)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()

    monkeypatch.setattr(store_module, "write_streamed", traced)
    for symbols in (2, 4):
        bars = _bars(tmp_path / f"bars{symbols}.parquet", symbols)
        prepare_data(_config(bars, tmp_path / f"store{symbols}"))
    few, many = peaks
    # each symbol's vectors held to the end add 1.5% of the peak a symbol here (the [N]
    # vectors of the previous preparation: +3.0% for 2 -> 4 symbols; now -0.8%, measured)
    assert many < few * 1.015, (few, many)


def test_pairwise_mean_square_is_numpys_mean_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scaling, "PAIRWISE_LEAF", 128)  # many leaves on a short column
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 129, 1000, 8193, 54_321):
        values = rng.standard_normal(n) * rng.lognormal(0, 3, n)
        blocks = np.split(values, np.sort(rng.integers(0, n, 4)))  # uneven, some empty
        want = float(np.mean(np.square(values, dtype=np.float64)))
        assert pairwise_mean_square(iter(blocks), n) == want, n
    rounded = values[:1000]  # the leaf sums added as numpy adds them: not a plain running sum
    assert pairwise_mean_square(iter([rounded]), 1000) != float(np.cumsum(rounded**2)[-1] / 1000)
    assert TargetScaler.fit(values).scale == float(np.sqrt(np.mean(values**2)))


def test_a_joined_profile_fits_the_pooled_curve_only_for_a_symbol_that_needs_it() -> None:
    fitted: list[int] = []
    curve = IntradayProfile(60, np.linspace(0.5, 1.5, 24))
    pooled = IntradayProfile(60, np.ones(24) * 2)

    def pool() -> IntradayProfile:
        fitted.append(1)
        return pooled

    both = IntradayProfile.joined([curve, curve], 60, pool)
    assert fitted == [] and np.array_equal(both.values, np.stack([curve.values] * 2))
    one = IntradayProfile.joined([curve, None], 60, pool)
    assert fitted == [1] and np.array_equal(one.values[1], pooled.values)


def test_a_symbol_without_a_training_bar_is_refused_alike(tmp_path: Path) -> None:
    bars = _bars(tmp_path / "bars.parquet", 3)
    frame = pd.read_parquet(bars)
    late = frame[
        (frame["symbol"] != "S1") | (frame.index >= frame.index[frame["symbol"] == "S1"][-60])
    ]
    late.to_parquet(bars, index=False)  # S1 trades only in the test span
    with pytest.raises(DataError) as memory:
        prepare_in_memory(_config(bars, None))
    with pytest.raises(DataError) as stored:
        prepare_data(_config(bars, tmp_path / "store"))
    assert "'S1' has no training bar" in str(memory.value)
    assert str(stored.value) == str(memory.value)
