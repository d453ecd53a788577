"""Several instruments in one file (ES, NQ, CL, ZN: own sessions, ticks, levels and
volatilities): each symbol is scaled with its own statistics and no window crosses two."""

import numpy as np
import pandas as pd
import pytest
import torch

from foxhunt.data import DataConfig, PreparedData, latest_windows, prepare_data
from foxhunt.data.instruments import INSTRUMENTS, generate_instruments
from foxhunt.data.scaling import StandardScaler

SMALL = {"lookback": 16, "horizon": 4, "volatility_windows": (6, 12), "baseline_window": 16}
SYMBOLS = ("CL", "ES", "NQ", "ZN")


@pytest.fixture(scope="module")
def bars() -> pd.DataFrame:
    return generate_instruments(days=8, seed=3, symbols=SYMBOLS)


@pytest.fixture(scope="module")
def data(bars: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory) -> PreparedData:
    path = tmp_path_factory.mktemp("instruments") / "four.parquet"
    bars.to_parquet(path)
    return prepare_data(DataConfig(path=path, fast_window=8, **SMALL))


def test_the_generator_gives_each_instrument_its_market(bars: pd.DataFrame) -> None:
    again = generate_instruments(days=8, seed=3, symbols=SYMBOLS)
    pd.testing.assert_frame_equal(bars, again)  # seeded
    opens = {}
    for symbol, frame in bars.groupby("symbol"):
        spec = INSTRUMENTS[str(symbol)]
        ticks = frame[["open", "high", "low", "close"]].to_numpy() / spec.tick
        np.testing.assert_allclose(ticks, np.round(ticks), atol=1e-6)
        returns = np.diff(np.log(frame["close"].to_numpy()))
        daily = returns.std() * np.sqrt(spec.session_minutes / 5)
        assert daily == pytest.approx(spec.daily_vol, rel=0.5)
        opens[symbol] = frame["timestamp"].iloc[0].hour
    assert opens == {"CL": 18, "ES": 18, "NQ": 18, "ZN": 20}


def test_each_symbol_has_its_own_scaler(data: PreparedData) -> None:
    scaler = data.preprocessor.scaler
    assert scaler.mean.shape == (len(SYMBOLS), len(scaler.names))
    ds = data.train
    codes = ds.symbol_codes.numpy()
    rows = np.unique(ds.anchors.numpy()[:, None] + np.arange(-ds.lookback + 1, 1))
    values = ds.past_values.numpy()[rows]
    for code, symbol in enumerate(data.preprocessor.symbols.categories):
        mine = values[codes[rows] == code]  # the symbol's training inputs, scaled
        assert symbol in SYMBOLS and len(mine) > 100
        np.testing.assert_allclose(mine.mean(axis=0), 0.0, atol=0.25)
        # each symbol on its own calendar: no early close in these sessions, so that session
        # input is constant (scaled to 0); every other column has unit spread
        constant = np.ptp(mine, axis=0) == 0
        assert set(np.asarray(scaler.names)[constant]) <= {"early_close"}
        np.testing.assert_allclose(mine.std(axis=0)[~constant], 1.0, atol=0.25)
    # ZN's returns are a fifth of CL's: with one shared scaler they would not be comparable
    log_return = scaler.names.index("log_return")
    assert (
        scaler.std[SYMBOLS.index("CL"), log_return]
        > 3 * scaler.std[SYMBOLS.index("ZN"), log_return]
    )


def test_no_window_crosses_two_series(data: PreparedData) -> None:
    for ds in (data.train, data.validation, data.test):
        rows = ds.anchors.numpy()[:, None] + np.arange(-ds.lookback + 1, ds.horizon + 1)
        codes = ds.symbol_codes.numpy()[rows]
        assert len(rows) and (codes == codes[:, :1]).all()
        assert set(np.unique(codes[:, 0])) == {0, 1, 2, 3}


def test_latest_scales_each_symbol_as_the_windows_do(
    data: PreparedData, bars: pd.DataFrame
) -> None:
    latest = latest_windows(data.preprocessor, bars)
    ds = data.test
    assert latest.symbols == SYMBOLS
    codes = ds.symbol_codes.numpy()
    for b, symbol in enumerate(latest.symbols):
        last = int(np.flatnonzero(codes == b)[-1])  # the symbol's last row
        expected = ds.past_values[last - ds.lookback + 1 : last + 1]
        torch.testing.assert_close(latest.batch.past[b], expected)
        assert latest.batch.static_categorical[b, 0] == SYMBOLS.index(symbol)


def test_older_scalers_with_one_shared_set_still_transform() -> None:
    shared = StandardScaler(("a", "b"), np.array([1.0, 2.0]), np.array([2.0, 4.0]))
    values = np.array([[3.0, 6.0], [1.0, 2.0]])
    codes = np.array([0, 1])
    np.testing.assert_allclose(shared.transform(values, codes=codes), [[1.0, 1.0], [0.0, 0.0]])
    per = StandardScaler.fit(("a", "b"), values, codes, groups=2)
    assert per.mean.shape == (2, 2)
    np.testing.assert_allclose(per.transform(values, codes=codes), 0.0)
    assert StandardScaler.from_state_dict(per.state_dict()) == per


def test_each_symbol_has_its_own_intraday_profile(data: PreparedData) -> None:
    profile = data.preprocessor.profile
    assert profile is not None and profile.values.shape[0] == len(SYMBOLS)
    bucket = profile.bucket_minutes
    before_zn_opens = (18 * 60 + 30) // bucket  # 18:30: CL trades, ZN (opens 20:00) does not
    cl, zn = SYMBOLS.index("CL"), SYMBOLS.index("ZN")
    assert profile.values[zn, before_zn_opens] == 1.0  # never seen
    assert profile.values[cl, before_zn_opens] != 1.0
    with pytest.raises(ValueError, match="symbol codes"):
        profile(np.array([600]))
