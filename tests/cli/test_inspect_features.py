"""`foxhunt inspect FILE --features`: every input with its group, window and warm-up."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.migrations import sections_of


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
    observed = [r["name"] for r in rows if r["kind"] == "observed"]
    # today's six, then the default group (activity at 12 bars: DataConfig.feature_groups)
    assert len(observed) == 11 and observed[6:] == [
        "volume_vs_minute", "clv", "log_volume_12", "rel_volume_12", "amihud_12"
    ]  # fmt: skip


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


def test_the_feature_groups_round_trip(tmp_path: Path) -> None:
    """Flags, a YAML config and the Python API give one DataConfig.feature_groups."""
    from foxhunt.cli.resolve import resolve
    from foxhunt.cli.train_config import run_config, train_command
    from foxhunt.data import DataConfig

    groups = ("returns:3/6", "realized", "cross:1/12")
    flags = run_config(resolve(train_command(), ["--feature-groups", ",".join(groups)])[1])
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("data:\n  feature_groups: [returns:3/6, realized, cross:1/12]\n")
    from_yaml = run_config(resolve(train_command(), ["--config", str(yaml_file)])[1])
    api = DataConfig(feature_groups=groups)
    assert flags.data.feature_groups == from_yaml.data.feature_groups == api.feature_groups
    assert DataConfig.from_dict(api.to_dict()) == api
    legacy = {k: v for k, v in api.to_dict().items() if k != "feature_groups"}
    old = sections_of({"data": legacy})["data"]  # a run saved before the library
    assert DataConfig.from_dict(old).feature_groups == ()


def error_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("foxhunt: error:")]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    "flags", [["returns:20000"], ["location:100000"], ["expiry"], ["cross"], ["expiry", "bad"]]
)
def test_inspect_refuses_what_train_refuses_with_the_same_line(
    flags: list[str], bars_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """inspect --features listed inputs that train then refused or crashed on (issue 42)."""
    bars = bars_file
    if flags[-1] == "bad":  # a contract column holding an impossible date
        frame = pd.read_parquet(bars_file).assign(contract="2026-13-01")
        bars = tmp_path / "bad.parquet"
        frame.to_parquet(bars)
    groups = ["--feature-groups", flags[0]]
    seen = error_line(capsys, ["inspect", str(bars), "--features", *groups])
    train = ["train", "--parquet-file", str(bars), *groups, "--lookback", "16", "--horizon", "4"]
    assert seen == error_line(capsys, [*train, "--output-dir", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()
