"""One bar, one value (issue 42): a bar given twice with different values (same symbol and
time) is refused at every door that reads bars for a forecast, with one line naming the
file, the symbol and the time; an exact copy is dropped with one warning."""

from pathlib import Path

import pandas as pd
import pytest

from .helpers import SMALL, cli, refused

WHEN = "2025-01-12 20:00:00-05:00"  # a bar inside the six sessions of `bars_file`


def with_duplicate(bars_file: Path, out: Path, *, conflicting: bool) -> Path:
    bars = pd.read_parquet(bars_file)
    row = bars[bars["timestamp"] == pd.Timestamp(WHEN)]
    assert len(row) == 1
    if conflicting:  # still a valid bar on its own: only the pair is wrong
        row = row.assign(close=row["low"].to_numpy(), volume=row["volume"].to_numpy() + 1)
    pd.concat([bars, row]).to_parquet(out)
    return out


def door(name: str, bars: Path, run: Path, tmp_path: Path) -> list[object]:
    out = tmp_path / "out"
    return {
        "train": ["train", "--parquet-file", bars, *SMALL, "--output-dir", out],
        "backtest": ["backtest", "--parquet-file", bars, *SMALL, "--folds", "2",
                     "--output-dir", out],
        "predict": ["predict", run, "--parquet-file", bars],
        "evaluate": ["evaluate", run, "--parquet-file", bars],
        "inspect": ["inspect", bars],
    }[name]  # fmt: skip


@pytest.mark.parametrize("name", ["train", "backtest", "predict", "evaluate", "inspect"])
def test_conflicting_duplicate_bars_are_refused(
    name: str, tmp_path: Path, bars_file: Path, trained_run: Path
) -> None:
    bars = with_duplicate(bars_file, tmp_path / "twice.parquet", conflicting=True)
    line = refused(door(name, bars, trained_run, tmp_path), "twice.parquet", "'ES'", WHEN)
    assert "differ in ['close', 'volume']" in line, line
    assert not (tmp_path / "out").exists(), "nothing written before the refusal"


def test_exact_duplicate_bars_are_dropped_with_one_warning(
    tmp_path: Path, bars_file: Path, trained_run: Path
) -> None:
    bars = with_duplicate(bars_file, tmp_path / "copy.parquet", conflicting=False)
    code, err = cli(door("evaluate", bars, trained_run, tmp_path))
    assert code == 0, err
    lines = [line for line in err.splitlines() if "duplicate" in line]
    assert len(lines) == 1 and "dropped 1 exact duplicate bar(s)" in lines[0], err
    assert WHEN in lines[0] and "'ES'" in lines[0], lines
