import numpy as np
import pandas as pd
import pytest

from foxhunt.data import generate_bars, validate_bars
from foxhunt.data.features import FeatureSpec, calendar_features, compute_features

SPEC = FeatureSpec(volatility_windows=(3, 6))


def features_of(frame: pd.DataFrame, spec: FeatureSpec = SPEC) -> tuple[pd.DataFrame, np.ndarray]:
    valid = validate_bars(frame, source="test", min_rows=1, extra_columns=spec.user_columns)
    codes = pd.factorize(valid["symbol"], sort=True)[0]
    f = compute_features(valid, spec, timezone="America/New_York", symbol_codes=codes)
    names = [*spec.observed_names, *spec.known_names]
    return pd.DataFrame(f.inputs, columns=names), f.returns


def test_feature_definitions(bars: pd.DataFrame) -> None:
    table, returns = features_of(bars)
    close = bars["close"].to_numpy()
    np.testing.assert_allclose(returns[1:], np.log(close[1:] / close[:-1]))
    assert np.isnan(returns[0])
    np.testing.assert_allclose(table["log_range"], np.log(bars["high"] / bars["low"]))
    np.testing.assert_allclose(table["close_open"], np.log(bars["close"] / bars["open"]))
    np.testing.assert_allclose(table["log_volume"], np.log1p(bars["volume"]))
    expected = pd.Series(returns).rolling(6).std().to_numpy()
    np.testing.assert_allclose(table["realized_vol_6"], expected, equal_nan=True)
    assert table["realized_vol_6"].isna().sum() == 6  # warm-up rows: first return is NaN


def test_features_never_cross_symbols(bars: pd.DataFrame) -> None:
    other = generate_bars(days=4, seed=2, symbols=("NQ",))
    table, returns = features_of(pd.concat([bars, other], ignore_index=True))
    alone, alone_returns = features_of(other)
    n = len(bars)
    pd.testing.assert_frame_equal(table.iloc[n:].reset_index(drop=True), alone)
    np.testing.assert_array_equal(returns[n:], alone_returns)
    assert np.isnan(returns[n]) and table["realized_vol_3"].iloc[n : n + 3].isna().all()


def test_calendar_in_local_time_across_dst() -> None:
    times = pd.DatetimeIndex(
        ["2026-03-05 18:05", "2026-03-09 18:05", "2026-03-09 09:30"], tz="America/New_York"
    )
    cal = calendar_features(times.tz_convert("UTC"), "America/New_York")
    np.testing.assert_allclose(cal[0, :2], cal[1, :2])  # same wall-clock minute
    angle = 2 * np.pi * (9 * 60 + 30) / 1440
    np.testing.assert_allclose(cal[2], [np.sin(angle), np.cos(angle), 0.0, 1.0], atol=1e-12)


def test_user_columns_are_added_as_is(bars: pd.DataFrame) -> None:
    spec = FeatureSpec((3,), observed_columns=("spread",), known_columns=("holiday",))
    frame = bars.assign(spread=np.arange(len(bars)) * 0.25, holiday=0.0)
    table, _ = features_of(frame, spec)
    assert list(table.columns[-6:]) == [
        *("spread", "minute_sin", "minute_cos"),
        *("weekday_sin", "weekday_cos", "holiday"),
    ]
    np.testing.assert_array_equal(table["spread"], frame["spread"])


def test_spec_round_trip() -> None:
    spec = FeatureSpec((4, 8), ("a",), ("b",))
    assert FeatureSpec.from_dict(spec.to_dict()) == spec
    assert spec.observed_names[-1] == "a" and spec.known_names[-1] == "b"


@pytest.mark.parametrize("windows", [(), (2,)])
def test_volatility_windows_are_configurable(bars: pd.DataFrame, windows: tuple[int, ...]) -> None:
    table, _ = features_of(bars, FeatureSpec(windows))
    assert [c for c in table.columns if c.startswith("realized_vol")] == [
        f"realized_vol_{w}" for w in windows
    ]
