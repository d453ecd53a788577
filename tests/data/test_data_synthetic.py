import time

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import generate_bars


def test_same_seed_same_bars_other_seed_other_bars() -> None:
    a = generate_bars(days=3, seed=5)
    pd.testing.assert_frame_equal(a, generate_bars(days=3, seed=5))
    assert not a["close"].equals(generate_bars(days=3, seed=6)["close"])


def test_columns_prices_and_volumes() -> None:
    bars = generate_bars(days=5, seed=0, symbols=("ES", "NQ"))
    assert list(bars.columns) == ["timestamp", "open", "high", "low", "close", "volume", "symbol"]
    assert str(bars["timestamp"].dt.tz) == "America/New_York"
    assert set(bars["symbol"]) == {"ES", "NQ"}
    prices = bars[["open", "high", "low", "close"]].to_numpy()
    assert np.all(np.mod(prices, 0.25) == 0)
    assert (bars["high"] >= bars[["open", "close"]].max(axis=1)).all()
    assert (bars["low"] <= bars[["open", "close"]].min(axis=1)).all()
    assert (bars["volume"] > 0).all()
    es = bars[bars["symbol"] == "ES"]
    assert 4500 < es["close"].median() < 5500


def test_globex_sessions_break_and_weekend() -> None:
    bars = generate_bars(days=10, seed=0)  # two weeks from Monday 2025-01-06
    t = bars["timestamp"]
    minute = t.dt.hour * 60 + t.dt.minute
    assert not ((minute >= 17 * 60) & (minute < 18 * 60)).any(), "maintenance break is empty"
    weekday = t.dt.day_of_week
    assert not (weekday == 5).any(), "no Saturday bars"
    assert (minute[weekday == 6] >= 18 * 60).all(), "Sunday only from the 18:00 open"
    assert not ((weekday == 4) & (minute >= 17 * 60)).any(), "Friday closes at 17:00"
    assert t.iloc[0] == pd.Timestamp("2025-01-05 18:00", tz="America/New_York")
    gaps = t.diff().dropna()
    assert set(gaps.unique()) == {
        pd.Timedelta("5min"),
        pd.Timedelta("65min"),  # 16:55 -> 18:00
        pd.Timedelta("2 days 01:05:00"),  # Friday 16:55 -> Sunday 18:00
    }


def test_dst_keeps_wall_clock_sessions() -> None:
    bars = generate_bars(days=15, seed=0, start="2025-03-03")  # DST starts 2025-03-09
    t = bars["timestamp"]
    opens = t[t.diff() > pd.Timedelta("30min")]
    assert set(opens.dt.hour) == {18} and set(opens.dt.minute) == {0}
    assert set(t.dt.tz_convert("UTC")[opens.index].dt.hour) == {23, 22}  # EST, then EDT


def test_intraday_u_shape_and_volatility_clustering() -> None:
    bars = generate_bars(days=60, seed=0)
    r = np.log(bars["close"]).diff()
    minute = bars["timestamp"].dt.hour * 60 + bars["timestamp"].dt.minute
    abs_r = r.abs().groupby(minute).mean()
    vol = bars["volume"].groupby(minute).mean()
    midday, overnight = abs_r.loc[720:780].mean(), abs_r.loc[0:300].mean()
    assert abs_r.loc[570] > 1.5 * midday and abs_r.loc[955] > 1.3 * midday > overnight
    assert vol.loc[570] > 3 * vol.loc[0:300].mean() and vol.loc[955] > 1.5 * vol.loc[720:780].mean()
    # Volatility clusters beyond the intraday pattern: |r| / seasonal level autocorrelates.
    deseasonalized = (r.abs() / minute.map(abs_r)).to_numpy()[1:]
    lagged = np.corrcoef(deseasonalized[:-12], deseasonalized[12:])[0, 1]
    assert lagged > 0.1


@pytest.mark.alone  # a wall-clock bound: no busy neighbour on the other core
def test_sixty_days_is_fast() -> None:
    start = time.perf_counter()
    bars = generate_bars(days=60, seed=0)
    assert len(bars) == 60 * 276
    assert time.perf_counter() - start < 1.0


def test_volatility_is_predictable_from_the_past() -> None:
    """What lets a TFT beat unconditional quantiles: past realized vol predicts future |r|."""
    r = np.log(generate_bars(days=30, seed=3)["close"]).diff()
    past_vol = r.rolling(12).std()
    future_abs = r.abs().rolling(8).mean().shift(-8)
    ok = past_vol.notna() & future_abs.notna()
    assert np.corrcoef(past_vol[ok], future_abs[ok])[0, 1] > 0.3
