"""`train`, `predict` and `evaluate` on a folder of daily Parquet files, with filters; bad
folders and globs end with exit code 2 and a line naming them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import generate_bars
from helpers import TINY_CLI
from helpers.contracts import write_contract_files


@pytest.fixture
def daily(tmp_path: Path) -> Path:
    bars = generate_bars(days=8, seed=2, symbols=("ES", "NQ"))
    folder = tmp_path / "daily"
    folder.mkdir()
    for when, part in bars.groupby(bars["timestamp"].dt.date):
        part.to_parquet(folder / f"{when}.parquet", index=False)
    return folder


def test_train_predict_and_evaluate_on_a_folder(
    daily: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    flags = ["--parquet-file", str(daily), "--symbols", "NQ", "--start", "2025-01-06 18:00"]
    args = ["train", *flags, *TINY_CLI, "--max-steps-per-epoch", "2", "--epochs", "1"]
    assert main([*args, "--no-report", "--output-dir", str(run)]) == 0
    config = json.loads((run / "config.json").read_text())["data"]
    assert (config["symbols"], config["start"]) == (["NQ"], "2025-01-06 18:00")
    assert json.loads((run / "identity.json").read_text())["data"]["files"] == len(
        list(daily.iterdir())
    )
    capsys.readouterr()
    assert (
        main(["predict", str(run), "--parquet-file", str(daily / "*.parquet"), "--symbols", "NQ"])
        == 0
    )
    table = capsys.readouterr().out
    assert " NQ " in table and " ES " not in table
    later = ["--start", "2025-01-12 18:00"]
    assert (
        main(["evaluate", str(run), "--parquet-file", str(daily), "--symbols", "NQ", *later]) == 0
    )
    # ES was not in training: asking for it is the usual unknown-symbol error
    assert main(["predict", str(run), "--parquet-file", str(daily)]) == 2


def test_bad_folders_and_globs_exit_2(
    daily: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for source, says in (
        (empty, "folder holding no .parquet"),
        (tmp_path / "none-*.parquet", "glob matches no file"),
    ):
        assert main(["train", "--parquet-file", str(source), *TINY_CLI]) == 2
        err = capsys.readouterr().err
        assert str(source) in err and says in err
    pd.DataFrame({"x": [1]}).to_parquet(daily / "zz-other.parquet")
    assert main(["train", "--parquet-file", str(daily), *TINY_CLI]) == 2
    assert "zz-other.parquet: its columns differ" in capsys.readouterr().err
    assert main(["train", "--start", "2025-02-01", "--end", "2025-01-01", *TINY_CLI]) == 2


@pytest.mark.parametrize("roll", [[], ["--roll-adjust", "ratio"]])
def test_train_predict_evaluate_on_two_contracts(
    roll: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_contract_files(tmp_path)
    run = tmp_path / "run"
    args = ["train", "--parquet-file", str(files["contracts"]), *TINY_CLI, *roll]
    assert (
        main(
            [
                *args,
                "--max-steps-per-epoch",
                "2",
                "--epochs",
                "1",
                "--no-report",
                "--output-dir",
                str(run),
            ]
        )
        == 0
    )
    saved = json.loads((run / "preprocessor.json").read_text())
    assert (saved["contract_column"], saved["roll_adjust"]) == ("auto", (roll or [None, None])[1])
    capsys.readouterr()
    assert main(["predict", str(run), "--parquet-file", str(files["contracts"])]) == 0
    assert main(["evaluate", str(run), "--parquet-file", str(files["contracts"])]) == 0
