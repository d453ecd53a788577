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


def renamed(path: Path, out: Path, old: str, new: str) -> Path:
    frame = pd.read_parquet(path)
    frame["contract"] = frame["contract"].replace(old, new)
    frame.to_parquet(out)
    return out


@pytest.mark.parametrize("bad", ["2026-13-01", "2025-02-30", "20250631"])
def test_an_impossible_contract_date_names_file_column_and_value(
    files: dict[str, Path], tmp_path: Path, bad: str
) -> None:
    """2026-13-01 was `internal error: ValueError: cannot assemble the datetimes`; 2025-02-30
    was read as March 2 (issue 42)."""
    path = renamed(files["contracts"], tmp_path / "bad.parquet", "ESM5", bad)
    config = DataConfig(path=path, feature_groups=("expiry",), **SMALL)
    with pytest.raises(DataError, match=rf"bad\.parquet: column 'contract': contract '{bad}'"):
        prepare_data(config)
    good = prepare_data(DataConfig(path=files["contracts"], feature_groups=("expiry",), **SMALL))
    with pytest.raises(DataError, match=rf"bad\.parquet: column 'contract': contract '{bad}'"):
        latest_windows(good.preprocessor, read_source(path))  # the predict door


def test_train_and_predict_exit_2_on_a_bad_contract_date(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = renamed(files["contracts"], tmp_path / "bad.parquet", "ESM5", "2026-13-01")
    args = ["train", "--parquet-file", str(path), "--feature-groups", "expiry"]
    args += ["--lookback", "16", "--horizon", "4", "--output-dir", str(tmp_path / "run")]
    assert main(args) == 2
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.startswith("foxhunt: error:")]
    assert len(lines) == 1 and "internal error" not in err, err
    assert "bad.parquet: column 'contract': contract '2026-13-01': not a date" in lines[0], err
    assert not (tmp_path / "run").exists()


def test_contracts_that_expired_long_before_their_bars_are_warned_about(
    files: dict[str, Path], tmp_path: Path, data_log: pytest.LogCaptureFixture
) -> None:
    """ESH2020 on 2025 bars: minutes_to_expiry five years negative, once taken in silence."""
    path = renamed(files["contracts"], tmp_path / "old.parquet", "ESH5", "ESH2020")
    prepare_data(DataConfig(path=path, feature_groups=("expiry",), **SMALL))
    lines = {r.getMessage() for r in data_log.records if "expired long before" in r.getMessage()}
    assert len(lines) == 1, lines
    assert "old.parquet: column 'contract': 1 contract(s)" in min(lines)
    assert "'ESH2020' expired 2020-03-20" in min(lines)
    data_log.clear()
    prepare_data(DataConfig(path=files["contracts"], feature_groups=("expiry",), **SMALL))
    assert not [r for r in data_log.records if "expired long before" in r.getMessage()]
