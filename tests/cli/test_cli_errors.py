"""Bad input: exit code 2 and one clear line on stderr, never a traceback."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import generate_bars


def bars(n_days: int = 3) -> pd.DataFrame:
    return generate_bars(days=n_days, seed=0)


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    err = capsys.readouterr().err
    return code, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("foxhunt: error:")]


def write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


def train_args(path: Path, tmp_path: Path) -> list[str]:
    return [
        "train",
        "--parquet-file",
        str(path),
        "--epochs",
        "1",
        "--output-dir",
        str(tmp_path / "run"),
    ]


def broken_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = bars()
    nan = good.copy()
    nan.loc[nan.index[10], "close"] = np.nan
    inf = good.copy()
    inf.loc[inf.index[11], "high"] = np.inf
    inverted = good.copy()
    inverted.loc[inverted.index[12], ["high", "low"]] = [1.0, 2.0]
    changed = good.iloc[20:21].assign(close=good["low"].iloc[20])  # an exact copy is dropped
    duplicated = pd.concat([good.iloc[:50], changed, good.iloc[50:]])
    text = good.copy()
    text["volume"] = text["volume"].astype(str)
    text.loc[text.index[3], "volume"] = "n/a"
    (tmp_path / "notparquet.parquet").write_text("this is not parquet")
    return {
        "missing file": (tmp_path / "nope.parquet", "nope.parquet"),
        "not parquet": (tmp_path / "notparquet.parquet", "notparquet.parquet"),
        "missing column": (
            write(good.drop(columns=["volume"]), tmp_path / "nov.parquet"),
            "volume",
        ),
        "non-numeric": (write(text, tmp_path / "text.csv"), "volume"),
        "nan": (write(nan, tmp_path / "nan.parquet"), "close"),
        "inf": (write(inf, tmp_path / "inf.parquet"), "high"),
        "high<low": (write(inverted, tmp_path / "inv.parquet"), "high"),
        "duplicate": (write(duplicated, tmp_path / "dup.parquet"), "two different bars"),
        "too short": (write(good.iloc[:30], tmp_path / "short.parquet"), "too few bars"),
    }


CASES = [
    "missing file",
    "not parquet",
    "missing column",
    "non-numeric",
    "nan",
    "inf",
    "high<low",
    "duplicate",
    "too short",
]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_exits_2_with_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, mentions = broken_files(tmp_path)[case]
    code, err = run_cli(train_args(path, tmp_path), capsys)
    assert code == 2, err
    lines = error_lines(err)
    assert len(lines) == 1, err
    assert mentions.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in err


def test_real_entry_point_has_no_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "foxhunt", "train", "--parquet-file", str(tmp_path / "x.parquet")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "x.parquet" in result.stderr


def test_bad_config_value_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_cli(["train", "--epochs", "0", "--output-dir", str(tmp_path)], capsys)
    assert code == 2
    assert "epochs" in error_lines(err)[0]
