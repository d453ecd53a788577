"""Per-symbol calendars: in a file of ES and CL bars each symbol's session inputs, forecast
times, gap classes and sessions come from its own calendar. The two CME calendars share the
18:00-17:00 ET hours but not the early closes: on Martin Luther King Day 2025 (Monday 20
January) ES closes at 13:00 ET, CL at 14:30 ET."""

import contextlib
import io
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import DataConfig, Preprocessor, latest_windows, prepare_data
from foxhunt.data.calendar import AUTO, CME_CRUDE, CME_EQUITY, gap_clock, load_sessions
from foxhunt.data.calendar_setting import resolve_calendar
from foxhunt.data.inspect import inspect_bars
from foxhunt.data.instruments import generate_instruments
from foxhunt.errors import ConfigError
from foxhunt.exports.onnx_spec import onnx_spec, used_inputs
from foxhunt.exports.onnx_trace import DEFAULT_OPSET
from foxhunt.trained_run import load_trained_run
from helpers import TINY_CLI

NY = "America/New_York"
SMALL = {"lookback": 16, "horizon": 4, "volatility_windows": (6, 12), "baseline_window": 32}
BOTH = (("CL", CME_CRUDE), ("ES", CME_EQUITY))


def ny(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz=NY)


@pytest.fixture(scope="module")
def bars() -> pd.DataFrame:
    """12 sessions of ES and CL, Thursday 9 to Friday 24 January 2025 (the synthetic bars
    trade every weekday 18:00-17:00 ET, the holiday too)."""
    return generate_instruments(days=12, seed=3, symbols=("ES", "CL"), start="2025-01-09")


def _prepared(tmp_path: Path, frame: pd.DataFrame, **overrides: object) -> Preprocessor:
    frame.to_parquet(tmp_path / "bars.parquet")
    config = DataConfig(path=tmp_path / "bars.parquet", **{**SMALL, **overrides})  # type: ignore[arg-type]
    return prepare_data(config).preprocessor


def test_the_setting_takes_one_calendar_per_symbol(caplog: pytest.LogCaptureFixture) -> None:
    text = DataConfig(calendar=f"ES={CME_EQUITY}, CL = {CME_CRUDE}").calendar
    assert text == f"CL={CME_CRUDE},ES={CME_EQUITY}"  # canonical: sorted pairs
    assert DataConfig(calendar={"ES": CME_EQUITY, "CL": CME_CRUDE}).calendar == text  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"DataConfig.calendar\['CL'\]='Mars'"):
        DataConfig(calendar=f"ES={CME_EQUITY},CL=Mars")
    with pytest.raises(ConfigError, match="SYMBOL=NAME"):
        DataConfig(calendar="ES=auto")
    with pytest.raises(ConfigError, match=r"names symbols \['GC'\].*its symbols: \['CL', 'ES'\]"):
        resolve_calendar(f"GC={CME_EQUITY}", ["ES", "CL"], "f")
    assert resolve_calendar(AUTO, ["ES", "CL"], "f") == BOTH  # mixed: each its own
    assert resolve_calendar(AUTO, ["ES", "NQM6"], "f") == CME_EQUITY  # one for all: a name
    assert resolve_calendar(f"CL={CME_EQUITY}", ["ES", "CL"], "f") == CME_EQUITY
    assert resolve_calendar("CL=none", ["ES", "CL"], "f") == (("ES", CME_EQUITY),)
    with caplog.at_level(logging.WARNING, "foxhunt.data"):
        assert resolve_calendar(AUTO, ["ES", "FOO"], "f") == (("ES", CME_EQUITY),)
    assert "no exchange calendar for symbols ['FOO']" in caplog.text


def test_each_symbols_rows_get_its_own_session_inputs(tmp_path: Path, bars: pd.DataFrame) -> None:
    p = _prepared(tmp_path, bars)
    assert p.spec.calendar == BOTH
    encoded = p.encode(bars, min_rows=1)
    names = [*p.spec.observed_names, *p.spec.known_names]
    session = [names.index(n) for n in ("minutes_to_close", "minutes_since_open", "early_close")]
    symbols = encoded.frame["symbol"].to_numpy()
    times = encoded.times_ns
    for symbol, calendar in BOTH:
        rows = symbols == symbol
        own = load_sessions(calendar, int(times.min()), int(times.max())).features(times[rows])
        np.testing.assert_allclose(encoded.features.inputs[rows][:, session], own)
    # MLK Day, 12:00 ET: one hour to the ES close, two and a half to the CL close
    noon = times == ny("2025-01-20 12:00").value
    to_close = dict(zip(symbols[noon], encoded.features.inputs[noon, session[0]], strict=True))
    assert to_close == {"ES": pytest.approx(60.0), "CL": pytest.approx(150.0)}
    # saved and loaded: the calendars travel in preprocessor.json as symbol -> name
    p.save(tmp_path / "preprocessor.json")
    saved = json.loads((tmp_path / "preprocessor.json").read_text())["spec"]["calendar"]
    assert saved == {"CL": CME_CRUDE, "ES": CME_EQUITY}
    assert Preprocessor.load(tmp_path / "preprocessor.json").spec == p.spec


def test_predict_dates_each_symbols_next_bars_by_its_own_session(
    tmp_path: Path, bars: pd.DataFrame
) -> None:
    p = _prepared(tmp_path, bars)
    cut = bars[bars["timestamp"] <= ny("2025-01-20 12:55")]  # MLK Day, before either close
    latest = latest_windows(p, cut)
    times = {name: list(latest.timestamps_for(b)) for b, name in enumerate(latest.symbols)}
    steps = [pd.Timedelta(minutes=m) for m in (0, 5, 10, 15)]
    assert times["ES"] == [ny("2025-01-20 18:00") + s for s in steps]  # ES closed at 13:00
    assert times["CL"] == [ny("2025-01-20 13:00") + s for s in steps]  # CL trades to 14:30
    known = slice(len(p.spec.observed_names), None)
    to_close = list(p.spec.known_names).index("minutes_to_close")
    for b, name in enumerate(latest.symbols):  # the model's inputs for those bars: unscaled
        code = latest.batch.static_categorical[b, 0].item()
        future = latest.batch.future[b].numpy().astype(np.float64)
        mean, std = p.scaler.mean, p.scaler.std
        if mean.ndim == 2:  # per-symbol statistics
            mean, std = mean[code], std[code]
        raw = future[:, to_close] * std[known][to_close] + mean[known][to_close]
        expected = [1380, 1375, 1370, 1365] if name == "ES" else [90, 85, 80, 75]
        np.testing.assert_allclose(raw, expected, atol=1e-2)


def test_inspect_classes_each_symbols_breaks_on_its_own_calendar(bars: pd.DataFrame) -> None:
    report = inspect_bars(bars, calendar=BOTH, lookback=16, horizon=4)
    assert report["calendar"] == {"CL": CME_CRUDE, "ES": CME_EQUITY}
    # the synthetic bars trade MLK Day to 16:55: past ES's 13:00 and CL's 14:30 close
    assert report["sessions"]["ES"]["off_calendar_bars"] == 48
    assert report["sessions"]["CL"]["off_calendar_bars"] == 30
    # per symbol: 9 daily breaks (one after the MLK session is unexplained) and 2 weekends
    assert report["gaps"]["by_kind"] == {"break": 16, "weekend": 4, "holiday": 0, "unexplained": 2}
    one = inspect_bars(bars, calendar=(("ES", CME_EQUITY),), lookback=16, horizon=4)
    assert list(one["sessions"]) == ["ES"]  # CL without a calendar: its gaps unclassified
    assert one["gaps"]["by_kind"] == {
        "break": 8,
        "weekend": 2,
        "holiday": 0,
        "unexplained": 1,
        "unclassified": 11,
    }


def test_inspect_cli_takes_calendars_per_symbol(
    tmp_path: Path, bars: pd.DataFrame, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "mixed.parquet"
    bars.to_parquet(path)
    setting = f"ES={CME_EQUITY},CL=none"
    assert main(["inspect", str(path), "--json", "--calendar", setting]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["calendar"] == {"ES": CME_EQUITY} and list(report["sessions"]) == ["ES"]
    assert main(["inspect", str(path), "--calendar", f"ZN={CME_EQUITY}"]) == 2
    assert "names symbols ['ZN'] that the file does not hold" in capsys.readouterr().err


def test_single_calendar_runs_are_unchanged(tmp_path: Path, bars: pd.DataFrame) -> None:
    """A file whose symbols share a calendar, or a run saved as version 3 (one name), gets the
    same spec, session inputs and forecast times as before per-symbol calendars."""
    es = bars[bars["symbol"] == "ES"].reset_index(drop=True)
    p = _prepared(tmp_path, es)
    assert p.spec.calendar == CME_EQUITY  # saved as a name, as before
    state = p.state_dict()
    assert state["spec"]["calendar"] == CME_EQUITY
    old = Preprocessor.from_state_dict({**state, "version": 3})
    assert old.spec == p.spec
    cut = es[es["timestamp"] <= ny("2025-01-20 12:55")]
    assert latest_windows(old, cut).timestamps_for(0)[0] == ny("2025-01-20 18:00")
    # the same as the per-symbol run gives ES in the mixed file
    mixed = _prepared(tmp_path, bars)
    encoded, alone = mixed.encode(bars, min_rows=1), p.encode(es, min_rows=1)
    rows = encoded.frame["symbol"].to_numpy() == "ES"
    np.testing.assert_allclose(encoded.features.inputs[rows], alone.features.inputs, rtol=1e-9)


def test_train_predict_and_export_with_calendars_per_symbol(
    tmp_path: Path, bars: pd.DataFrame, capsys: pytest.CaptureFixture
) -> None:
    """The CLI end to end: `--calendar SYM=NAME,...` saved with the run, `predict` dating each
    symbol's bars on its own session, the ONNX JSON naming the calendar of each symbol."""
    path = tmp_path / "mixed.parquet"
    bars[bars["timestamp"] <= ny("2025-01-20 12:55")].to_parquet(path)
    setting = f"ES={CME_EQUITY},CL={CME_CRUDE}"
    args = ["train", "--parquet-file", str(path), *TINY_CLI, "--calendar", setting]
    args += ["--epochs", "1", "--max-steps-per-epoch", "3", "--no-validate-initial"]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*args, "--no-report", "--output-dir", str(tmp_path / "run")]) == 0
    out = tmp_path / "forecast.csv"
    assert (
        main(["predict", str(tmp_path / "run"), "--parquet-file", str(path), "--output", str(out)])
        == 0
    )
    assert "on each symbol's calendar" in capsys.readouterr().out
    table = pd.read_csv(out)
    stamps = pd.to_datetime(table["timestamp"], utc=True).dt.tz_convert(NY)
    first = stamps.groupby(table["symbol"]).min()
    assert first.to_dict() == {"CL": ny("2025-01-20 13:00"), "ES": ny("2025-01-20 18:00")}
    # the onnx_export.json `export --onnx` writes for this run, without tracing its graph
    # (~10 s; the graph sees tensors only, never a calendar: tests/exports trace it)
    loaded = load_trained_run(tmp_path / "run")
    names = used_inputs(loaded.config)
    pre = loaded.preprocessor.state_dict()
    spec = onnx_spec(loaded.config, pre, names, DEFAULT_OPSET, tmp_path / "run")
    assert json.loads(json.dumps(spec))["calendar"] == {"CL": CME_CRUDE, "ES": CME_EQUITY}


def test_the_trading_clock_of_cross_breaks_is_each_symbols_own(bars: pd.DataFrame) -> None:
    """MLK Day 12:55 ET to the 18:00 reopen: 5 minutes of ES trading time (closed 13:00),
    95 of CL's (open to 14:30)."""
    times = pd.DatetimeIndex(bars["timestamp"]).as_unit("ns").asi8
    symbols = bars["symbol"].to_numpy()
    clock = gap_clock(times, BOTH, True, symbols)
    for symbol, minutes in (("ES", 5), ("CL", 95)):
        at = {
            t: np.flatnonzero((symbols == symbol) & (times == ny(f"2025-01-20 {t}").value))[0]
            for t in ("12:55", "18:00")
        }
        assert clock[at["18:00"]] - clock[at["12:55"]] == minutes * 60_000_000_000
    np.testing.assert_array_equal(gap_clock(times, BOTH, False, symbols), times)  # not asked


def test_a_resumed_run_checks_the_calendars_it_names(tmp_path: Path, bars: pd.DataFrame) -> None:
    p = _prepared(tmp_path, bars)
    path = tmp_path / "bars.parquet"
    again = prepare_data(
        DataConfig(path=path, calendar=f"ES={CME_EQUITY}", **SMALL), preprocessor=p
    )
    assert again.preprocessor.spec.calendar == BOTH
    with pytest.raises(ConfigError, match=r"DataConfig.calendar='CL=CME Globex Equity' differs"):
        prepare_data(DataConfig(path=path, calendar=f"CL={CME_EQUITY}", **SMALL), preprocessor=p)
