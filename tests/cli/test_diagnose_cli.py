"""`foxhunt diagnose`: bad settings exit 2 naming the field, before any bar is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from foxhunt.cli import main


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--overfit-steps", "0"], "--overfit-steps"),
        (["--overfit-windows", "0"], "--overfit-windows"),
        (["--overfit-ratio", "1.5"], "--overfit-ratio"),
        (["--lr-range-steps", "1"], "--lr-range-steps"),
        (["--lr-range-start", "0"], "--lr-range-start"),
        (["--lr-range-start", "1", "--lr-range-end", "1e-3"], "lr_range_start"),
    ],
)
def test_bad_settings_exit_2_naming_the_field(
    flags: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["diagnose", *flags, "--output-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("foxhunt: error:")]
    assert len(lines) == 1 and named in lines[0], err
    assert "Traceback" not in err
    assert not (tmp_path / "d").exists()


def test_train_has_the_diagnostics_switch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--diagnostics", "--print-config"]) == 0
    assert "diagnostics: true" in capsys.readouterr().out
