"""`foxhunt predict` with a calendar: forecast bars that trade, and known columns taken from
--future-file or refused."""

import contextlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from foxhunt.cli import main
from helpers import TINY_CLI, calendar_bars

NY = "America/New_York"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("known")
    bars = calendar_bars("2026-03-29", "2026-04-25", seed=2)
    bars = bars[bars["timestamp"] <= pd.Timestamp("2026-04-24 16:55", tz=NY)]
    bars = bars.assign(event=(bars["timestamp"].dt.minute == 30).astype(float))
    bars.to_parquet(folder / "bars.parquet")
    args = ["train", "--parquet-file", str(folder / "bars.parquet"), *TINY_CLI]
    args += ["--known-columns", "event", "--epochs", "1", "--max-steps-per-epoch", "5"]
    args += ["--no-validate-initial", "--no-report", "--output-dir", str(folder / "run")]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 0
    return folder / "run", folder / "bars.parquet"


def test_predict_refuses_known_columns_without_future_values(
    run: tuple[Path, Path], capsys: pytest.CaptureFixture
) -> None:
    folder, bars = run
    assert main(["predict", str(folder), "--parquet-file", str(bars)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--future-file" in err and "['event']" in err


def test_predict_uses_the_future_file(
    run: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    folder, bars = run
    sunday = pd.date_range("2026-04-26 18:00", periods=4, freq="5min", tz=NY)
    tables = []
    for value in (0.0, 25.0):
        future = tmp_path / f"future{value:g}.csv"
        pd.DataFrame({"timestamp": sunday, "event": value}).to_csv(future, index=False)
        out = tmp_path / f"fc{value:g}.csv"
        args = ["predict", str(folder), "--parquet-file", str(bars), "--future-file", str(future)]
        assert main([*args, "--output", str(out)]) == 0
        tables.append(pd.read_csv(out))
    assert "on calendar 'CME Globex Equity'" in capsys.readouterr().out
    stamps = pd.to_datetime(tables[0]["timestamp"], utc=True).dt.tz_convert(NY)
    assert list(stamps) == list(sunday)  # the weekend is skipped
    quantiles = [c for c in tables[0].columns if c.endswith("_bp")]
    assert not tables[0][quantiles].equals(tables[1][quantiles]), "the future values are used"
    short = tmp_path / "short.csv"
    pd.DataFrame({"timestamp": sunday[:3], "event": 0.0}).to_csv(short, index=False)
    args = ["predict", str(folder), "--parquet-file", str(bars), "--future-file", str(short)]
    assert main(args) == 2
    assert "no row for symbol 'ES' at 2026-04-26 18:15:00-04:00" in capsys.readouterr().err


def test_a_run_saved_before_calendars_predicts_as_before(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """config.json without calendar/cross_breaks and a version-2 preprocessor.json (no
    calendar) load: forecast times extrapolated from the bar spacing, no session inputs."""
    bars = calendar_bars("2026-04-05", "2026-04-25", seed=3)
    bars = bars[bars["timestamp"] <= pd.Timestamp("2026-04-24 16:55", tz=NY)]
    bars.to_parquet(tmp_path / "bars.parquet")
    args = ["train", "--parquet-file", str(tmp_path / "bars.parquet"), *TINY_CLI]
    args += ["--calendar", "none", "--epochs", "1", "--max-steps-per-epoch", "2"]
    assert main([*args, "--no-report", "--output-dir", str(tmp_path / "run")]) == 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    del config["data"]["calendar"], config["data"]["cross_breaks"]
    del config["format"]  # written before formats were numbered (foxhunt/migrations.py)
    (tmp_path / "run" / "config.json").write_text(json.dumps(config))
    pre = json.loads((tmp_path / "run" / "preprocessor.json").read_text())
    del pre["cross_breaks"], pre["spec"]["calendar"]
    pre["version"] = 2
    (tmp_path / "run" / "preprocessor.json").write_text(json.dumps(pre))
    capsys.readouterr()
    out = tmp_path / "fc.csv"
    predict = ["predict", str(tmp_path / "run"), "--parquet-file", str(tmp_path / "bars.parquet")]
    assert main([*predict, "--output", str(out)]) == 0
    assert "times extrapolated from the bar spacing" in capsys.readouterr().out
    stamps = pd.to_datetime(pd.read_csv(out)["timestamp"], utc=True).dt.tz_convert(NY)
    assert stamps.iloc[0] == pd.Timestamp("2026-04-24 17:00", tz=NY)
    pre["spec"]["calendar"] = "Mars"
    (tmp_path / "run" / "preprocessor.json").write_text(json.dumps(pre))
    assert main(predict) == 2
    assert "preprocessor.json: preprocessor spec.calendar='Mars'" in capsys.readouterr().err


def test_predict_refuses_a_forecast_bar_given_two_values(
    run: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """The --future-file door of issue 42: two rows of one forecast bar with different known
    values were reduced to the last one in silence; an exact copy is dropped with a warning."""
    folder, bars = run
    sunday = pd.date_range("2026-04-26 18:00", periods=4, freq="5min", tz=NY)
    rows = pd.DataFrame({"timestamp": sunday, "symbol": "ES", "event": 0.0})
    args = ["predict", str(folder), "--parquet-file", str(bars), "--future-file"]
    twice = tmp_path / "twice.csv"
    pd.concat([rows, rows.iloc[[1]].assign(event=1.0)]).to_csv(twice, index=False)
    capsys.readouterr()
    assert main([*args, str(twice)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "twice.csv: two different bars for symbol 'ES' at 2026-04-26 18:05:00-04:00" in err
    copy = tmp_path / "copy.csv"
    pd.concat([rows, rows.iloc[[1]]]).to_csv(copy, index=False)
    assert main([*args, str(copy)]) == 0
    assert "copy.csv: dropped 1 exact duplicate bar(s)" in capsys.readouterr().err
