"""Tracking's settings, its missing-package message, and that it costs nothing when off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tracked import TRACKED

from foxhunt.cli import main
from foxhunt.errors import ConfigError
from foxhunt.tracking import TrackingConfig, check_installed


@pytest.mark.parametrize(
    ("module", "logger", "package"),
    [
        ("mlflow", "mlflow", "mlflow-skinny"),
        ("torch.utils.tensorboard", "tensorboard", "tensorboard"),
    ],
)
def test_a_missing_package_is_one_line_before_training(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    module: str,
    logger: str,
    package: str,
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    run = tmp_path / "run"
    argv = ["train", *TRACKED, "--output-dir", str(run), "--logger", logger]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"--logger {logger} needs the {package} package" in err
    assert "pip install 'foxhunt[tracking]'" in err
    assert not run.exists()  # nothing written, nothing trained


def test_the_default_mlflow_store_needs_sqlalchemy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    argv = ["train", *TRACKED, "--output-dir", str(tmp_path / "run"), "--logger", "mlflow"]
    assert main(argv) == 2
    assert "--logger mlflow needs the sqlalchemy package" in capsys.readouterr().err
    check_installed(["mlflow"], (tmp_path / "mlruns").as_uri())  # a file store does not
    with pytest.raises(ConfigError, match="sqlalchemy"):
        check_installed(["mlflow"], "postgresql+psycopg://host/db")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"loggers": ("wandb",)}, "unknown"),
        ({"loggers": ("none", "mlflow")}, "'none' cannot"),
        ({"loggers": ("mlflow", "mlflow")}, "at most once"),
        ({"log_every": 0}, "log_every"),
        ({"experiment": ""}, "experiment"),
    ],
)
def test_bad_settings_name_the_field(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=f"tracking.*{named}"):
        TrackingConfig(**fields)


def test_an_unknown_logger_flag_exits_2(capsys: pytest.CaptureFixture) -> None:
    assert main(["train", *TRACKED, "--logger", "wandb"]) == 2
    assert "--logger" in capsys.readouterr().err


def test_training_without_a_logger_imports_neither(tmp_path: Path) -> None:
    """Startup time: tensorboard and mlflow load only when asked for (a fresh process)."""
    code = (
        "import sys, contextlib, io\n"
        "import foxhunt, foxhunt.cli, foxhunt.cli.train, foxhunt.tracking\n"
        "from foxhunt.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['train', *{TRACKED!r}, '--epochs', '1', '--no-report',\n"
        f"                 '--output-dir', {str(tmp_path / 'run')!r}]) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'tensorboard')"
        " or m.startswith('torch.utils.tensorboard')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"
