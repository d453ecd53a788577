"""Contract rolls: per-contract series, back-adjusted series, and suspect jumps without a
contract column. The file: two overlapping ES contracts, the later one 20 points above."""

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import DataConfig, PreparedData, prepare_data
from foxhunt.data.contracts import back_adjust, contract_rolls
from foxhunt.data.jumps import suspect_jumps
from foxhunt.data.series import validated_series
from foxhunt.data.sources import read_source
from foxhunt.migrations import sections_of
from helpers.contracts import OFFSET, PER_SESSION, ROLL_SESSION, write_contract_files

SMALL = {
    "lookback": 16,
    "horizon": 4,
    "volatility_windows": (6, 12),
    "baseline_window": 16,
    "fast_window": 8,
    "max_gap": None,  # even windows allowed across session gaps must not cross a roll
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_contract_files(tmp_path_factory.mktemp("contracts"))


def rows_of(ds) -> np.ndarray:  # type: ignore[no-untyped-def]
    """[W, L+H] frame rows of every window: observed rows, then target rows."""
    return ds.anchors.numpy()[:, None] + np.arange(-ds.lookback + 1, ds.horizon + 1)


def splits(data: PreparedData):  # type: ignore[no-untyped-def]
    return [data.train, data.validation, data.test]


def the_series(path: Path, **settings: str | None) -> pd.DataFrame:
    frame = read_source(path)
    return validated_series(frame, source=str(path), min_rows=20, **settings)[0]


def test_each_contract_is_its_own_series(files: dict[str, Path]) -> None:
    data = prepare_data(DataConfig(path=files["contracts"], **SMALL))
    contracts = the_series(files["contracts"], contract_column="auto")["contract"].to_numpy()
    seen = set()
    for ds in splits(data):
        rows = rows_of(ds)
        # no window, and so no target return, spans two contracts
        assert (contracts[rows] == contracts[rows[:, :1]]).all()
        assert np.isfinite(ds.target_values.numpy()[rows[:, -ds.horizon :]]).all()
        seen |= set(contracts[rows[:, 0]])
    assert seen == {"ESH5", "ESM5"}
    assert data.summary.symbols == ("ES",)  # one symbol embedding for both contracts
    # the overlap: both contracts have windows ending at the same bar times
    times = data.train.timestamps.asi8
    anchors = data.train.anchors.numpy()
    by_contract = {c: set(times[anchors[contracts[anchors] == c]]) for c in ("ESH5", "ESM5")}
    assert by_contract["ESH5"] & by_contract["ESM5"]


@pytest.mark.parametrize("method", ["ratio", "difference"])
def test_back_adjusted_series_rolls_at_the_volume_crossover(
    files: dict[str, Path], method: str
) -> None:
    raw = the_series(files["contracts"], contract_column="auto")
    adjusted, rolls = back_adjust(raw, "contract", method, source="test")
    assert len(rolls) == 1 and (rolls[0].old, rolls[0].new) == ("ESH5", "ESM5")
    assert contract_rolls(raw, "contract") == rolls
    assert rolls[0].gap == pytest.approx(OFFSET)  # measured on a bar both contracts traded
    roll_time = raw["timestamp"].iloc[ROLL_SESSION * PER_SESSION]  # the session's first bar
    assert rolls[0].timestamp == roll_time
    assert adjusted["timestamp"].is_monotonic_increasing and adjusted["timestamp"].is_unique
    late = raw[raw["contract"] == "ESM5"].set_index("timestamp")["close"]
    # the latest prices are the real ones, the roll bar's return the new contract's own
    after = adjusted[adjusted["timestamp"] >= roll_time].set_index("timestamp")["close"]
    pd.testing.assert_series_equal(after, late[late.index >= roll_time])
    at = int(np.flatnonzero(adjusted["timestamp"] == roll_time)[0])
    close = adjusted["close"].to_numpy()
    own = np.log(late.loc[roll_time] / late[late.index < roll_time].iloc[-1])
    assert np.log(close[at] / close[at - 1]) == pytest.approx(own, abs=1e-12)


def test_no_training_target_includes_the_roll(files: dict[str, Path]) -> None:
    data = prepare_data(DataConfig(path=files["contracts"], roll_adjust="ratio", **SMALL))
    raw = the_series(files["contracts"], contract_column="auto")
    own = {}  # every within-contract log return, by contract and time
    for name, bars in raw.groupby("contract"):
        close = bars["close"].to_numpy()
        own[name] = pd.Series(np.log(close[1:] / close[:-1]), index=bars["timestamp"].iloc[1:])
    series = the_series(files["contracts"], contract_column="auto", roll_adjust="ratio")
    times, contracts = series["timestamp"], series["contract"].to_numpy()
    scale = data.preprocessor.target_scale
    checked = 0
    for ds in splits(data):
        targets = rows_of(ds)[:, -ds.horizon :].ravel()
        got = ds.target_values.numpy()[targets].astype(np.float64) * scale
        want = np.array([own[contracts[r]][times.iloc[r]] for r in np.unique(targets)])
        lookup = dict(zip(np.unique(targets), want, strict=True))
        np.testing.assert_allclose(got, [lookup[r] for r in targets], rtol=1e-5, atol=1e-9)
        checked += len(targets)
    roll_row = int(np.flatnonzero(contracts[1:] != contracts[:-1])[0]) + 1
    assert any(roll_row in rows_of(ds)[:, -ds.horizon :] for ds in splits(data)), checked


def test_without_a_contract_column_train_warns_at_the_roll(
    files: dict[str, Path], data_log: pytest.LogCaptureFixture
) -> None:
    frame = the_series(files["continuous"])
    roll_time = frame["timestamp"].iloc[ROLL_SESSION * PER_SESSION]
    jumps = suspect_jumps(frame)
    assert [j.timestamp for j in jumps] == [roll_time]
    assert jumps[0].log_return == pytest.approx(np.log1p(OFFSET / 5000), abs=0.002)
    data_log.clear()
    prepare_data(DataConfig(path=files["continuous"], **SMALL))
    warnings = [r.getMessage() for r in data_log.records if r.levelno == logging.WARNING]
    assert any(str(roll_time) in w and "contract" in w for w in warnings), warnings
    data_log.clear()  # with the contract column: nothing suspect to say
    prepare_data(DataConfig(path=files["contracts"], **SMALL))
    assert not [r for r in data_log.records if "jumps by" in r.getMessage()]


def test_legacy_configs_ignore_contract_columns() -> None:
    legacy = DataConfig.from_dict(sections_of({"data": {"lookback": 16}})["data"])
    assert legacy.contract_column is None and DataConfig().contract_column == "auto"


def test_an_expiry_column_of_dates_names_the_contracts(
    files: dict[str, Path], tmp_path: Path
) -> None:
    frame = pd.read_parquet(files["contracts"])
    expiry = {"ESH5": pd.Timestamp("2025-03-21"), "ESM5": pd.Timestamp("2025-06-20")}
    frame["Expiry"] = frame.pop("contract").map(expiry)
    frame.to_parquet(tmp_path / "expiry.parquet")
    by_name = prepare_data(DataConfig(path=files["contracts"], **SMALL))
    by_date = prepare_data(DataConfig(path=tmp_path / "expiry.parquet", **SMALL))
    for a, b in zip(splits(by_name), splits(by_date), strict=True):
        np.testing.assert_array_equal(a.anchors.numpy(), b.anchors.numpy())
        np.testing.assert_array_equal(a.target_values.numpy(), b.target_values.numpy())
    adjusted = prepare_data(
        DataConfig(path=tmp_path / "expiry.parquet", roll_adjust="difference", **SMALL)
    )
    assert adjusted.summary.rows == 24 * PER_SESSION  # one series: each bar once
