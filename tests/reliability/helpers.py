"""Shared by the reliability tests: tiny runs through the CLI, one-line errors, snapshots."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from foxhunt.cli import main
from helpers import TINY_CLI

SMALL = [
    *TINY_CLI, "--max-steps-per-epoch", "3", "--seed", "3", "--epochs", "1", "--no-report",
]  # fmt: skip


def cli(args: list[str]) -> tuple[int, str]:
    """Exit code and stderr of `foxhunt ARGS`, stdout swallowed."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, err.getvalue()


def refused(args: list[str], *mentions: str) -> str:
    """Assert exit 2 with one `foxhunt: error:` line naming `mentions`; return that line."""
    code, err = cli(args)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("foxhunt: error:")]
    assert code == 2 and len(lines) == 1, (code, err)
    for word in mentions:
        assert word.lower() in lines[0].lower(), (word, lines[0])
    return lines[0]


def train(bars: Path, out: Path, *extra: str) -> None:
    code, err = cli(["train", "--parquet-file", bars, *SMALL, "--output-dir", out, *extra])
    assert code == 0, err


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (relative path -> bytes): compared before and after."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }
