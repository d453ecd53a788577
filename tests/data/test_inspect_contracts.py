"""`foxhunt inspect` on the two-contract files: the roll is found with a contract column,
and named as a suspect jump without one."""

import json
from pathlib import Path

import pytest

from foxhunt.cli import main
from foxhunt.data.sources import read_source
from helpers.contracts import PER_SESSION, ROLL_SESSION, write_contract_files


def inspect_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    capsys.readouterr()
    assert main(["inspect", str(path), "--json", "--calendar", "none", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_inspect_names_the_roll(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = write_contract_files(tmp_path)
    continuous = read_source(files["continuous"]).sort_values("timestamp")
    roll_time = str(continuous["timestamp"].iloc[ROLL_SESSION * PER_SESSION])

    with_column = inspect_json(files["contracts"], capsys)
    assert "suspect_jumps" not in with_column
    contracts = with_column["contracts"]
    assert [c["contract"] for c in contracts["by_symbol"]["ES"]] == ["ESH5", "ESM5"]
    assert [(r["from"], r["to"]) for r in contracts["rolls"]] == [("ESH5", "ESM5")]
    assert contracts["rolls"][0]["gap_points"] == pytest.approx(20.0)
    assert contracts["rolls"][0]["timestamp"] == roll_time

    without = inspect_json(files["continuous"], capsys)
    assert "contracts" not in without
    assert [j["timestamp"] for j in without["suspect_jumps"]] == [roll_time]
    # told to ignore the column, the overlapping contracts are one series of duplicates
    assert main(["inspect", str(files["contracts"]), "--contract-column", "none"]) == 2
