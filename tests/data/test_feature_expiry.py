"""Group "expiry": minutes to each bar's contract's expiry, a known input read from the
contract column, for past and forecast bars alike."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import DataConfig, prepare_data
from foxhunt.data.features.expiry import minutes_to_expiry
from foxhunt.data.latest import latest_windows
from foxhunt.data.sources import read_source
from foxhunt.errors import ConfigError, DataError
from helpers.contracts import write_contract_files

SMALL = {"lookback": 16, "horizon": 4, "volatility_windows": (6, 12), "calendar": "none"}
NEW_YORK = "America/New_York"


def ns(*times: str) -> np.ndarray:
    return pd.DatetimeIndex(times).tz_localize(NEW_YORK).as_unit("ns").asi8


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_contract_files(tmp_path_factory.mktemp("expiry"))


def test_minutes_to_the_third_friday_or_the_date_named() -> None:
    # March 2026: the 20th is its third Friday; daylight saving starts on the 8th
    at = ns("2026-03-13 09:30", "2026-03-13 09:30", "2026-03-13 09:30", "2026-03-01 00:00")
    got = minutes_to_expiry(at, np.asarray(["ESH6", "NQH26", "6EH2026", "2026-03-20"]))
    np.testing.assert_array_equal(got, [7 * 1440, 7 * 1440, 7 * 1440, 19 * 1440 + 570 - 60])
    # a one-digit year is the one nearest the bar: ESH6 traded in December 2025 is March 2026
    december = minutes_to_expiry(ns("2025-12-19 09:30"), np.asarray(["ESH6"]))
    assert december[0] == 91 * 1440 - 60
    after = minutes_to_expiry(ns("2026-03-20 10:30"), np.asarray(["ESH6"]))
    assert after[0] == -60  # past the expiry: negative


def test_a_contract_naming_no_month_is_one_clear_error() -> None:
    with pytest.raises(DataError, match=r"contract 'front'.*ESH6"):
        minutes_to_expiry(ns("2026-03-13 09:30"), np.asarray(["front"]))


def test_a_run_feeds_it_as_a_known_input_of_past_and_forecast_bars(
    files: dict[str, Path],
) -> None:
    data = prepare_data(DataConfig(path=files["contracts"], feature_groups=("expiry",), **SMALL))
    names = data.schema.future_names
    assert "minutes_to_expiry" in names  # a known input: the future bars' too
    pre = data.preprocessor
    assert pre.spec.contract_column == "contract"
    column = len(data.schema.past_names) - len(names) + names.index("minutes_to_expiry")
    mean, std = np.atleast_2d(pre.scaler.mean), np.atleast_2d(pre.scaler.std)  # one symbol
    scaler = (mean[0, column], std[0, column])
    ds = data.train
    rows = ds.anchors.numpy()
    frame = read_source(files["contracts"])
    encoded = pre.encode(frame, min_rows=20)
    contracts = encoded.frame["contract"].to_numpy()[rows]
    expected = minutes_to_expiry(encoded.times_ns[rows], contracts)
    got = ds.past_values[rows, column].double().numpy() * scaler[1] + scaler[0]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # forecast bars: their anchor's contract (the one listed last), at the forecast times
    latest = latest_windows(pre, frame)
    future = latest.batch.future[0, :, names.index("minutes_to_expiry")].double().numpy()
    times = latest.timestamps_for(0).as_unit("ns").asi8
    wanted = minutes_to_expiry(times, np.asarray(["ESM5"] * len(times)))
    np.testing.assert_allclose(future * scaler[1] + scaler[0], wanted, rtol=1e-6)


def test_it_needs_a_contract_column(files: dict[str, Path]) -> None:
    config = DataConfig(path=files["continuous"], feature_groups=("expiry",), **SMALL)
    with pytest.raises(ConfigError, match=r"'expiry'.*contract column"):
        prepare_data(config)


def test_inspect_lists_it_as_known(files: dict[str, Path]) -> None:
    out = io.StringIO()
    args = ["inspect", str(files["contracts"]), "--features", "--feature-groups", "expiry"]
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    line = next(x for x in out.getvalue().splitlines() if x.startswith("minutes_to_expiry"))
    assert line.split()[1:3] == ["known", "expiry"]
