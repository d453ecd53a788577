"""`foxhunt inspect FILE --features`: every input with its group, window and warm-up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foxhunt.cli import main
from foxhunt.data import generate_bars


@pytest.fixture(scope="module")
def bars_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bars") / "es.parquet"
    generate_bars(days=2, seed=0).to_parquet(path)
    return path


def listing(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    assert main(["inspect", *argv, "--features", "--json", "--calendar", "none"]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return rows


def test_the_default_inputs(bars_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = listing(capsys, str(bars_file))
    assert [r["name"] for r in rows][:3] == ["symbol", "log_return", "log_range"]
    vol = next(r for r in rows if r["name"] == "realized_vol_48")
    assert (vol["group"], vol["window"], vol["warmup"], vol["kind"]) == (
        "realized_vol",
        48,
        "48 bars",
        "observed",
    )
    assert sum(r["kind"] == "observed" for r in rows) == 6


def test_the_tft_225_preset(bars_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = listing(capsys, str(bars_file), "--preset", "tft-225")
    assert sum(r["kind"] == "observed" for r in rows) >= 210
    yz = next(r for r in rows if r["name"] == "yz_1380")
    assert (yz["group"], yz["window"], yz["warmup"]) == ("ranges", 1380, "1380 bars")
    assert {"month_sin", "days_to_month_end"} <= {r["name"] for r in rows if r["kind"] == "known"}


def test_bad_groups_are_one_line(bars_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(bars_file), "--features", "--feature-groups", "nope"]) == 2
    assert main(["inspect", str(bars_file), "--features", "--feature-groups", "cross"]) == 2
    err = capsys.readouterr().err
    assert "unknown feature group 'nope'" in err and "'cross' needs several symbols" in err
