"""Issue 16, "silently wrong": every numeric flag of every subcommand refuses non-finite and
out-of-range values with the flag's name, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from foxhunt.cli import commands
from foxhunt.cli.generated import number_kind
from foxhunt.config_fields import Range

from .helpers import SMALL, refused


def numeric_flags() -> list[tuple[str, str, bool, Range]]:
    """(subcommand, flag, is_int, range) for every int/float flag the CLI has, found from
    the generated arguments (every subcommand's), not listed."""
    out = []
    for name, command in commands().items():
        for arg in command.args:
            if (kind := number_kind(arg.hint)) is not None:
                assert arg.range is not None, arg.key
                out.append((name, arg.flag, kind is int, arg.range))
    return out


FLAGS = numeric_flags()


def test_the_sweep_covers_the_known_numeric_flags() -> None:
    names = {flag for _, flag, _, _ in FLAGS}
    expected = {"--lr", "--grad-clip", "--checkpoint-every", "--batch-size", "--dist-timeout"}
    assert expected | {"--memory-limit-gb", "--leak-threshold-mb", "--resume-from"} <= names
    assert {"--opset", "--steps", "--threads", "--heartbeat", "--lookback"} <= names
    assert {name for name, _, _, _ in FLAGS} >= {"train", "bench-memory", "export", "inspect"}


@pytest.mark.parametrize(("command", "flag", "is_int", "bounds"), FLAGS)
def test_non_finite_and_out_of_range_values_are_refused(
    command: str, flag: str, is_int: bool, bounds: Range
) -> None:
    values = ["nan", "inf", "-inf", "1e400"] if not is_int else ["1.5", "x"]
    values.append(str(bounds.low - 1))
    if bounds.low_open:
        values.append(str(int(bounds.low)) if is_int else str(bounds.low))
    if bounds.high != float("inf"):
        values.append(str(int(bounds.high) + 1))
    for value in values:
        refused([command, flag, value], flag)


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["train", "--lr", "inf"], ["--lr", "finite"]),
        (["train", "--grad-clip", "nan"], ["--grad-clip", "finite"]),
        (["train", "--checkpoint-every", "-3"], ["--checkpoint-every", ">= 1"]),
        (["bench-memory", "--batch-size", "0"], ["--batch-size", ">= 1"]),
        (["train", "--memory-budget", "garbage"], ["--memory-budget", "512MB"]),
        (["train", "--quantiles", "0.1,nan,0.9"], ["--quantiles", "finite"]),
        (["train", "--val-fraction", "1"], ["--val-fraction", "< 1"]),
        (["train", "--synthetic-days", "100000000"], ["--synthetic-days", "<= 10000"]),
        (["train", "--no-such-flag"], ["unrecognized arguments"]),
    ],
)
def test_issue_examples(args: list[str], mentions: list[str]) -> None:
    refused(args, *mentions)


def test_a_tiny_memory_budget_says_how_much_is_needed(tmp_path: Path, bars_file: Path) -> None:
    args = ["train", "--parquet-file", bars_file, *SMALL, "--output-dir", tmp_path / "run"]
    refused([*args, "--memory-budget", "1KB"], "1 KB budget", "at least")
