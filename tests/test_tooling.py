"""Lint, format and type checks are part of the test suite, so CI enforces them."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    "args",
    [("ruff", "check", "."), ("ruff", "format", "--check", "."), ("mypy",)],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_tool_is_clean(args: tuple[str, ...]) -> None:
    if shutil.which(args[0]) is None and run_tool(args[0], "--version").returncode != 0:
        pytest.skip(f"{args[0]} is not installed (pip install -e .[dev])")
    result = run_tool(*args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_test_modules_have_unique_names() -> None:
    """pytest imports a test folder without __init__.py by its file's name alone: two files of
    one name collide only when one worker collects both, so a targeted run never sees it."""
    seen: dict[str, Path] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if (path.parent / "__init__.py").exists():
            continue  # imported by its package's dotted name
        other = seen.setdefault(path.name, path)
        assert other == path, f"{other.relative_to(ROOT)} and {path.relative_to(ROOT)}"
