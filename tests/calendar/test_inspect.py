"""`foxhunt inspect --json` on bars made on the CME calendar: every closure classed as
scheduled (across the end of daylight saving and Thanksgiving), missing bars as unexplained."""

import json
from pathlib import Path

import pandas as pd
import pytest

from foxhunt.cli import main
from helpers import calendar_bars

NY = "America/New_York"


def inspect_json(path: Path, capsys: pytest.CaptureFixture, *extra: str) -> dict:
    capsys.readouterr()
    assert main(["inspect", str(path), "--json", "--lookback", "16", "--horizon", "4", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_inspect_classes_scheduled_gaps(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # sessions Mon 2026-10-26 .. Fri 2026-12-04: DST ends Sunday 2026-11-01, Thanksgiving
    # 2026-11-26 closes 13:00 ET and its Friday 13:15 ET
    bars = calendar_bars("2026-10-25", "2026-12-04").assign(volume=5.0)
    bars.loc[[0, 300], "volume"] = 0.0  # the first bar (after no gap) and one inside a session
    bars.to_parquet(tmp_path / "clean.parquet")
    report = inspect_json(tmp_path / "clean.parquet", capsys)
    assert report["calendar"] == "CME Globex Equity" and report["rows"] == len(bars)
    assert report["bar_spacing"] == str(pd.Timedelta("5min"))
    assert report["gaps"]["by_kind"] == {"break": 23, "weekend": 4, "holiday": 2, "unexplained": 0}
    sessions = report["sessions"]
    assert sessions["with_bars"] == sessions["in_span"] == 30
    assert sessions["early_closes"] == ["2026-11-26", "2026-11-27"]
    assert sessions["off_calendar_bars"] == 0
    assert report["zero_volume_bars"] == {"total": 2, "after_a_gap": 1}
    windows = report["windows"]
    assert windows["none"] == len(bars) - 19  # every window of 16 + 4 bars
    assert windows["auto"] < windows["auto --cross-breaks"] == windows["none"]

    # an hour lost inside a session is unexplained; two thin bars after a reopen are not
    times = bars["timestamp"]
    hole = (times >= pd.Timestamp("2026-11-10 10:00", tz=NY)) & (
        times < pd.Timestamp("2026-11-10 11:00", tz=NY)
    )
    thin = times.isin(pd.DatetimeIndex(["2026-11-08 18:00", "2026-11-08 18:05"]).tz_localize(NY))
    bars[~hole & ~thin].to_parquet(tmp_path / "holes.parquet")
    report = inspect_json(tmp_path / "holes.parquet", capsys)
    assert report["gaps"]["by_kind"] == {"break": 23, "weekend": 4, "holiday": 2, "unexplained": 1}
    assert report["gaps"]["unexplained_missing_bars"] == 12
    (gap,) = report["gaps"]["unexplained_examples"]
    assert gap["after"] == "2026-11-10 09:55:00-05:00" and gap["missing_bars"] == 12
    assert report["windows"]["auto --cross-breaks"] < windows["auto --cross-breaks"]


def test_inspect_without_a_calendar(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    calendar_bars("2026-10-25", "2026-11-07", symbol="XYZ").to_parquet(tmp_path / "x.parquet")
    report = inspect_json(tmp_path / "x.parquet", capsys)
    assert report["calendar"] is None and "sessions" not in report
    assert report["gaps"]["by_kind"] == {"unclassified": 9}  # 4 breaks + a weekend + 4 breaks
    text = inspect_json(tmp_path / "x.parquet", capsys, "--calendar", "CME Globex Equity")
    assert text["gaps"]["by_kind"]["weekend"] == 1
    assert main(["inspect", str(tmp_path / "x.parquet"), "--calendar", "Mars"]) == 2
