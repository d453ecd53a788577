"""The intraday volatility profile and the causal baseline scale of every window."""

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import DataConfig, Preprocessor, generate_bars, latest_windows, prepare_data
from foxhunt.data.volatility import IntradayProfile, causal_rms, minute_of_day

SMALL = {"lookback": 16, "horizon": 4, "volatility_windows": (6, 12), "baseline_window": 20}


def test_profile_matches_a_hand_built_one() -> None:
    # bucket 5 min: minutes 0 and 3 share bucket 0, minute 10 is bucket 2, minute 1435 is
    # bucket 287 (bucket 0's neighbour across midnight), the rest are never seen
    returns = np.array([1.0, -3.0, 2.0, -2.0, np.nan, 4.0])
    minutes = np.array([0, 3, 10, 10, 10, 1435])
    k = 2.0
    profile = IntradayProfile.fit(returns, minutes, bucket_minutes=5, shrinkage=k)
    overall = (1 + 3 + 2 + 2 + 4) / 5  # mean |r|, NaN skipped
    b0, b2, b287 = [(s + k * overall) / (n + k) / overall for s, n in ((4, 2), (4, 2), (4, 1))]
    # 1-2-1 over seen neighbours: bucket 0 sees 287, bucket 2 sees none, 287 sees 0
    b0, b2, b287 = (b287 + 2 * b0) / 3, b2, (2 * b287 + b0) / 3
    norm = np.sqrt((2 * b0**2 + 2 * b2**2 + b287**2) / 5)  # mean square over training rows
    assert profile.values.shape == (288,)
    assert profile(np.array([0, 4, 10, 14, 1439])) == pytest.approx(
        np.array([b0, b0, b2, b2, b287]) / norm
    )
    assert profile(np.array([5, 600, 1430])) == pytest.approx([1.0, 1.0, 1.0])  # never seen
    assert np.mean(profile(minutes[np.isfinite(returns)]) ** 2) == pytest.approx(1.0)
    again = IntradayProfile.from_state_dict(profile.state_dict())
    assert again == profile


def test_minute_of_day_is_local() -> None:
    times = pd.DatetimeIndex(["2026-03-06 14:35", "2026-03-09 13:35"], tz="UTC")  # DST between
    assert minute_of_day(times, "America/New_York").tolist() == [9 * 60 + 35, 9 * 60 + 35]


def test_causal_rms_warms_up_skips_gaps_and_never_crosses_series() -> None:
    values = np.array([1.0, 2.0, np.nan, 3.0, 4.0, 10.0, 20.0, 30.0])
    starts = np.array([True, False, False, False, False, True, False, False])
    out = causal_rms(values, 4, starts)  # needs 2 finite values of the last 4, own series only
    expected = [
        np.nan,
        np.sqrt(2.5),
        np.sqrt(2.5),  # the NaN (a return over a gap) is skipped, not propagated
        np.sqrt(14 / 3),
        np.sqrt(29 / 3),
        np.nan,  # a new series starts its own warm-up
        np.sqrt(250),
        np.sqrt(1400 / 3),
    ]
    np.testing.assert_allclose(out, expected)


@pytest.fixture(scope="module")
def fitted() -> Preprocessor:
    config = DataConfig(
        synthetic_market="garch", synthetic_days=6, synthetic_symbols=("ES", "NQ"), **SMALL
    )
    return prepare_data(config).preprocessor


def _two_symbols() -> pd.DataFrame:
    return generate_bars(days=3, seed=5, symbols=("ES", "NQ"))


def _scales(preprocessor: Preprocessor, frame: pd.DataFrame) -> dict[int, np.ndarray]:
    dataset = preprocessor.dataset(frame)
    batch = dataset.__getitems__(list(range(len(dataset))))
    assert batch.scale is not None and batch.anchor is not None
    assert np.isfinite(batch.scale.numpy()).all() and (batch.scale > 0).all()
    return dict(zip(batch.anchor.tolist(), batch.scale.numpy(), strict=True))


def test_scale_is_the_baseline_formula(fitted: Preprocessor) -> None:
    frame = _two_symbols()
    dataset = fitted.dataset(frame)
    batch = dataset[7]
    anchor = int(batch.anchor[0])  # type: ignore[index]
    encoded = fitted.encode(frame, min_rows=1)
    returns = encoded.features.returns
    minutes = minute_of_day(encoded.times, fitted.timezone)
    assert fitted.profile is not None
    past, ahead = slice(anchor - 19, anchor + 1), slice(anchor + 1, anchor + 5)
    codes = encoded.symbol_codes  # each symbol's own curve
    window = returns[past] / fitted.profile(minutes[past], codes[past])
    base = np.sqrt(np.mean(window**2)) / fitted.target_scale
    want = base * fitted.profile(minutes[ahead], codes[ahead])
    assert batch.scale is not None
    np.testing.assert_allclose(batch.scale[0].numpy(), want, rtol=1e-5)


def test_a_future_spike_changes_no_earlier_scale(fitted: Preprocessor) -> None:
    frame = _two_symbols().sort_values(["symbol", "timestamp"], kind="stable")
    frame = frame.reset_index(drop=True)
    before = _scales(fitted, frame)
    spiked = frame.copy()
    row = 400  # inside ES, the first symbol
    spiked.loc[row, ["close", "high"]] = spiked.loc[row, "close"] * 1.05
    after = _scales(fitted, spiked)
    nq_first = int(np.flatnonzero(frame["symbol"].to_numpy() == "NQ")[0])
    changed = [a for a in before if not np.array_equal(before[a], after[a])]
    assert changed, "the spike must reach some later window"
    assert min(changed) >= row  # no window anchored before the spike moved
    assert max(changed) < nq_first  # and no NQ window: scales never mix two symbols


def test_latest_carries_the_scale_of_the_next_bars(fitted: Preprocessor) -> None:
    latest = latest_windows(fitted, _two_symbols())
    scale = latest.batch.scale
    assert scale is not None and scale.shape == (2, 4)
    assert np.isfinite(scale.numpy()).all() and (scale > 0).all()


def test_version_1_preprocessor_still_loads(fitted: Preprocessor) -> None:
    state = fitted.state_dict()
    assert state["version"] == Preprocessor.VERSION
    old = {k: v for k, v in state.items() if k not in ("profile", "baseline_window")}
    old["version"] = 1
    loaded = Preprocessor.from_state_dict(old)
    assert loaded.profile is None
    frame = _two_symbols()
    assert loaded.dataset(frame)[0].scale is None
    assert latest_windows(loaded, frame).batch.scale is None
    assert len(loaded.dataset(frame)) >= len(fitted.dataset(frame))  # no baseline warm-up


def test_profile_is_fitted_on_training_rows_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bars = generate_bars(days=6, seed=2)
    spiked = bars.copy()
    last = len(spiked) - 3  # in the test split
    spiked.loc[last, ["close", "high"]] = spiked.loc[last, "close"] * 1.05
    profiles = []
    for name, frame in (("a", bars), ("b", spiked)):
        frame.to_parquet(tmp_path / f"{name}.parquet")
        config = DataConfig(path=tmp_path / f"{name}.parquet", **SMALL)
        profiles.append(prepare_data(config).preprocessor.profile)
    assert profiles[0] == profiles[1]


def test_vol_signal_is_the_log_ratio_of_fast_to_base_volatility(tmp_path) -> None:  # type: ignore[no-untyped-def]
    frame = _two_symbols()
    path = tmp_path / "bars.parquet"
    frame.to_parquet(path)
    preprocessor = prepare_data(DataConfig(path=path, **SMALL, fast_window=5)).preprocessor
    assert preprocessor.fast_window == 5
    dataset = preprocessor.dataset(frame)
    batch = dataset[9]
    anchor = int(batch.anchor[0])  # type: ignore[index]
    encoded = preprocessor.encode(frame, min_rows=1)
    minutes = minute_of_day(encoded.times, preprocessor.timezone)
    assert preprocessor.profile is not None
    adjusted = encoded.features.returns / preprocessor.profile(minutes, encoded.symbol_codes)

    def rms(n: int) -> float:
        return float(np.sqrt(np.mean(adjusted[anchor - n + 1 : anchor + 1] ** 2)))

    assert batch.vol_signal is not None and batch.vol_signal.shape == (1, 1)
    np.testing.assert_allclose(float(batch.vol_signal[0, 0]), np.log(rms(5) / rms(20)), rtol=1e-5)
    latest = latest_windows(preprocessor, frame).batch.vol_signal
    assert latest is not None and latest.shape == (2, 1) and np.isfinite(latest.numpy()).all()
    state = preprocessor.state_dict()
    assert Preprocessor.from_state_dict(state).fast_window == 5
    del state["fast_window"]  # a run saved before the field: no signal
    state["version"] = 5  # a version whose files may lack it (foxhunt/migrations.py)
    old = Preprocessor.from_state_dict(state)
    assert old.fast_window == 0 and old.dataset(frame)[0].vol_signal is None


def test_a_future_spike_moves_no_earlier_vol_signal(fitted: Preprocessor) -> None:
    frame = _two_symbols().sort_values(["symbol", "timestamp"], kind="stable")
    frame = frame.reset_index(drop=True)

    def signals(f: pd.DataFrame) -> dict[int, float]:
        dataset = fitted.dataset(f)
        batch = dataset.__getitems__(list(range(len(dataset))))
        assert batch.vol_signal is not None and batch.anchor is not None
        return dict(zip(batch.anchor.tolist(), batch.vol_signal[:, 0].tolist(), strict=True))

    before = signals(frame)
    spiked = frame.copy()
    row = 400
    spiked.loc[row, ["close", "high"]] = spiked.loc[row, "close"] * 1.05
    after = signals(spiked)
    changed = [a for a in before if before[a] != after[a]]
    assert changed and min(changed) >= row


@pytest.mark.parametrize("fast", [1, -1, 20, 64])
def test_fast_window_must_be_shorter_than_the_baseline_window(fast: int) -> None:
    from foxhunt.errors import ConfigError

    with pytest.raises(ConfigError, match="fast_window"):
        DataConfig(**SMALL, fast_window=fast)
