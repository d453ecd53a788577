"""Exchange calendars: the library's CME schedule, forecast bars that really trade, the
session inputs the model gets for them, windows across breaks, old runs without a calendar."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import DataConfig, Preprocessor, latest_windows, prepare_data
from foxhunt.data.calendar import AUTO, CME_EQUITY, load_sessions, symbol_root
from foxhunt.data.calendar_setting import resolve_calendar
from foxhunt.errors import ConfigError
from foxhunt.migrations import sections_of
from helpers import calendar_bars

NY = "America/New_York"
SMALL = {"lookback": 16, "horizon": 4, "volatility_windows": (6, 12), "baseline_window": 32}


def ny(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz=NY)


def test_the_cme_equity_calendar_of_2026() -> None:
    """What docs/calendars.md relies on: 18:00-17:00 ET sessions, the DST switch, holidays and
    early closes as CME publishes them."""
    s = load_sessions(CME_EQUITY, ny("2026-03-01").value, ny("2026-12-01").value)
    by_date = {str(d): i for i, d in enumerate(s.dates)}

    def hours(date: str) -> tuple[str, str, bool]:
        i = by_date[date]
        show = [
            str(pd.Timestamp(t, tz="UTC").tz_convert(NY))[5:16]
            for t in (s.open_ns[i], s.close_ns[i])
        ]
        return show[0], show[1], bool(s.early[i])

    assert hours("2026-03-06") == ("03-05 18:00", "03-06 17:00", False)
    assert hours("2026-03-09") == ("03-08 18:00", "03-09 17:00", False)  # first day of EDT
    assert hours("2026-04-03") == ("04-02 18:00", "04-03 09:15", True)  # Good Friday, jobs day
    assert hours("2026-07-03") == ("07-02 18:00", "07-03 13:00", True)  # July 4th observed
    assert "2026-07-04" not in by_date and "2026-07-05" not in by_date
    assert hours("2026-11-26") == ("11-25 18:00", "11-26 13:00", True)  # Thanksgiving
    assert hours("2026-11-27") == ("11-26 18:00", "11-27 13:15", True)


def test_calendar_inferred_from_symbols(caplog: pytest.LogCaptureFixture) -> None:
    assert symbol_root("ESM6") == "ES" and symbol_root("MES") == "MES"
    assert resolve_calendar(AUTO, ["ES", "NQZ25"], "f") == CME_EQUITY
    assert resolve_calendar(AUTO, ["CL"], "f") == "CMEGlobex_Crude"
    assert resolve_calendar(AUTO, ["XYZ"], "f") is None
    assert "pass --calendar NAME" in caplog.text
    with pytest.raises(ConfigError, match="not a known exchange calendar"):
        DataConfig(calendar="CME Nowhere")
    with pytest.raises(ConfigError, match="cross_breaks"):
        DataConfig(calendar="none", cross_breaks=True)


def _prepared(tmp_path: Path, bars: pd.DataFrame, **overrides: object) -> Preprocessor:
    bars.to_parquet(tmp_path / "bars.parquet")
    config = DataConfig(path=tmp_path / "bars.parquet", **{**SMALL, **overrides})
    return prepare_data(config).preprocessor


def _future_inputs(p: Preprocessor, bars: pd.DataFrame) -> tuple[pd.DatetimeIndex, pd.DataFrame]:
    """Forecast times and the unscaled known inputs the model gets for them, by name."""
    latest = latest_windows(p, bars)
    future = latest.batch.future[0].numpy().astype(np.float64)  # [H, F]
    known = slice(len(p.spec.observed_names), None)
    raw = future * p.scaler.std[known] + p.scaler.mean[known]
    return latest.timestamps_for(0), pd.DataFrame(raw, columns=list(p.spec.known_names))


def test_friday_close_forecasts_sunday_evening(tmp_path: Path) -> None:
    bars = calendar_bars("2026-03-29", "2026-04-25")
    bars = bars[bars["timestamp"] <= ny("2026-04-24 16:55")]  # cut at Friday's last bar
    p = _prepared(tmp_path, bars)
    assert p.spec.calendar == CME_EQUITY
    times, inputs = _future_inputs(p, bars)
    assert list(times) == [ny(f"2026-04-26 18:{m:02d}") for m in (0, 5, 10, 15)]
    np.testing.assert_allclose(inputs["minutes_since_open"], [0, 5, 10, 15], atol=1e-3)
    np.testing.assert_allclose(inputs["minutes_to_close"], [1380, 1375, 1370, 1365], atol=1e-3)
    np.testing.assert_allclose(inputs["early_close"], 0.0, atol=1e-3)
    minute = 2 * np.pi * (18 * 60 + np.array([0, 5, 10, 15])) / 1440
    np.testing.assert_allclose(inputs["minute_sin"], np.sin(minute), atol=1e-3)
    np.testing.assert_allclose(inputs["weekday_sin"], np.sin(2 * np.pi * 6 / 7), atol=1e-3)


def test_early_close_and_holiday_are_skipped(tmp_path: Path) -> None:
    """Christmas Eve closes 13:15 ET, Christmas is shut, then the weekend: from 13:00 the next
    bars are 13:05, 13:10 (an early-close session) and Sunday 18:00, 18:05."""
    bars = calendar_bars("2026-11-29", "2026-12-25")
    bars = bars[bars["timestamp"] <= ny("2026-12-24 13:00")]
    p = _prepared(tmp_path, bars)
    times, inputs = _future_inputs(p, bars)
    expected = ["2026-12-24 13:05", "2026-12-24 13:10", "2026-12-27 18:00", "2026-12-27 18:05"]
    assert list(times) == [ny(t) for t in expected]
    np.testing.assert_allclose(inputs["early_close"], [1, 1, 0, 0], atol=1e-3)
    np.testing.assert_allclose(inputs["minutes_to_close"], [10, 5, 1380, 1375], atol=1e-3)
    # New Year's Day (a Friday): Thursday's last bar is followed by Sunday's first
    after = calendar_bars("2026-12-01", "2027-01-01")
    times, _ = _future_inputs(p, after[after["timestamp"] <= ny("2026-12-31 16:55")])
    assert times[0] == ny("2027-01-03 18:00")


def test_windows_cross_breaks_only_when_asked(tmp_path: Path) -> None:
    bars = calendar_bars("2026-03-01", "2026-03-14")  # the DST switch on 2026-03-08
    hole = (bars["timestamp"] >= ny("2026-03-10 10:00")) & (
        bars["timestamp"] < ny("2026-03-10 11:00")
    )
    bars = bars[~hole].reset_index(drop=True)
    bars.to_parquet(tmp_path / "bars.parquet")
    plain = prepare_data(DataConfig(path=tmp_path / "bars.parquet", **SMALL))
    crossing = prepare_data(DataConfig(path=tmp_path / "bars.parquet", cross_breaks=True, **SMALL))
    assert crossing.preprocessor.cross_breaks and not plain.preprocessor.cross_breaks
    for data, crosses in ((plain, False), (crossing, True)):
        stamps = data.train.timestamps
        ns = stamps.as_unit("ns").asi8
        for split in (data.train, data.validation, data.test):
            a = split.anchors.numpy()
            first, last = ns[a - 15], ns[a + 4]  # lookback 16, horizon 4
            spans = last - first
            assert (spans > pd.Timedelta("2h").value).any() == crosses  # over a break
            hole_at = ny("2026-03-10 11:00").value
            assert not ((first < hole_at) & (last >= hole_at)).any(), "the hole always splits"
    assert len(crossing.train) > len(plain.train)


def test_runs_saved_before_calendars_load_without_one(tmp_path: Path) -> None:
    bars = calendar_bars("2026-04-05", "2026-04-25")
    p = _prepared(tmp_path, bars, calendar="none")
    state = p.state_dict()
    del state["cross_breaks"], state["spec"]["calendar"]
    state["version"] = 2
    old = Preprocessor.from_state_dict(state)
    assert old.spec.calendar is None and len(old.spec.known_names) == 4
    times, _ = _future_inputs(old, bars[bars["timestamp"] <= ny("2026-04-24 16:55")])
    assert times[0] == ny("2026-04-24 17:00")  # extrapolated, as before calendars
    assert DataConfig(**sections_of({"data": {}})["data"]).calendar == "none"


def test_a_resumed_run_keeps_its_calendar(tmp_path: Path) -> None:
    bars = calendar_bars("2026-04-05", "2026-04-25")
    p = _prepared(tmp_path, bars)
    path = tmp_path / "bars.parquet"
    again = prepare_data(DataConfig(path=path, **SMALL), preprocessor=p)  # auto: the saved one
    assert again.preprocessor.spec.calendar == CME_EQUITY
    with pytest.raises(ConfigError, match=r"DataConfig.calendar='none' differs from the saved"):
        prepare_data(DataConfig(path=path, calendar="none", **SMALL), preprocessor=p)


def test_future_values_by_symbol_and_time() -> None:
    from foxhunt.data.future import future_known_values
    from foxhunt.errors import DataError

    t = pd.date_range("2026-04-26 18:00", periods=2, freq="5min", tz=NY)
    ns = np.stack([t.as_unit("ns").asi8] * 2)  # [B=2, H=2]
    rows = pd.DataFrame({"timestamp": t.append(t), "symbol": ["ES", "ES", "NQ", "NQ"]})
    rows = rows.assign(event=[1.0, 2.0, 3.0, 4.0])
    got = future_known_values(rows, ("event",), ("NQ", "ES"), ns)
    np.testing.assert_array_equal(got[:, 0], [3.0, 4.0, 1.0, 2.0])  # symbol-major
    with pytest.raises(DataError, match="not a finite number at a forecast bar of 'ES'"):
        future_known_values(rows.assign(event="x"), ("event",), ("ES",), ns[:1])
    with pytest.raises(DataError, match=r"known columns \['rain'\] not found"):
        future_known_values(rows, ("rain",), ("ES",), ns[:1])
    # one forecast bar, two values: refused, never the first or last silently (issue 42)
    twice = pd.concat([rows, rows.iloc[[2]].assign(event=9.0)], ignore_index=True)
    with pytest.raises(DataError, match=r"two different bars for symbol 'NQ' at 2026-04-26 18:00"):
        future_known_values(twice, ("event",), ("NQ", "ES"), ns)
    same = pd.concat([rows, rows.iloc[[2]]], ignore_index=True)  # exact: dropped
    np.testing.assert_array_equal(
        future_known_values(same, ("event",), ("NQ",), ns[:1])[:, 0], [3, 4]
    )
