"""A thread count from every door (--threads, a YAML config, the Python API, OMP_NUM_THREADS,
MKL_NUM_THREADS): one that cannot run exits 2 with one line naming the door, before the run
folder is written; a count above the usable cores runs with one warning line; the count a
run used is recorded in config.json, and a resume without --threads keeps it.

The environment variables run in fresh processes: libgomp reads OMP_NUM_THREADS when torch
loads, so the command line must refuse a bad one before anything imports torch."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from foxhunt.cli import main
from foxhunt.errors import ConfigError
from foxhunt.training.config import TrainingConfig
from foxhunt.training.threads import CEILING, available_cores
from helpers import SYNTHETIC_CLI, TINY_CLI, tiny_job, tiny_run, tiny_training

#: three steps of the tiny model, no report
STEPS = [*SYNTHETIC_CLI, *TINY_CLI, "--epochs", "1", "--max-steps-per-epoch", "3"]
SHORT = [*STEPS, "--report", "false"]


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """main() points foxhunt's logger at this test's stderr and stops it propagating: undone,
    so that a later test's caplog sees the job's lines."""
    loggers = [logging.getLogger(name) for name in ("foxhunt", "py.warnings")]
    saved = [(lg.handlers[:], lg.propagate, lg.level) for lg in loggers]
    yield
    for lg, (handlers, propagate, level) in zip(loggers, saved, strict=True):
        lg.handlers[:], lg.propagate = handlers, propagate
        lg.setLevel(level)


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("foxhunt: error:")]


def refused_in_process(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["train", *SHORT, *argv, "--output-dir", str(out)])
    err = capsys.readouterr().err
    lines = errors(err)
    assert code == 2 and len(lines) == 1, err
    assert not out.exists() and not list(out.parent.glob(f".{out.name}*")), "a folder was written"
    return lines[0]


def train_process(env: dict[str, str], out: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m foxhunt train` in a fresh process with `env` added to (or, "" values aside,
    replacing) this one's thread variables."""
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    command = [sys.executable, "-m", "foxhunt", "train", *SHORT, *argv, "--output-dir", str(out)]
    return subprocess.run(
        command, env={**base, **env}, capture_output=True, text=True, timeout=240, check=False
    )


def test_the_flag_over_the_ceiling_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refused_in_process(["--threads", "1024"], tmp_path / "run", capsys)
    assert line.startswith("foxhunt: error: --threads (training.threads): ")
    assert f"<= {CEILING}" in line and "1024" in line


def test_a_yaml_config_over_the_ceiling_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("training:\n  threads: 5000\n")
    line = refused_in_process(["--config", str(config)], tmp_path / "run", capsys)
    assert f"--config {config}" in line and "training.threads" in line and "5000" in line


def test_the_api_refuses_a_count_over_the_ceiling_and_a_bad_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=r"training\.threads=1024"):
        TrainingConfig(threads=1024)
    # torch is loaded here already: the job still refuses before it writes the folder
    monkeypatch.setenv("OMP_NUM_THREADS", "99999")
    out = tmp_path / "run"
    with pytest.raises(ConfigError, match="OMP_NUM_THREADS=99999"):
        tiny_job(out)
    assert not out.exists()


@pytest.mark.parametrize("name", ["OMP_NUM_THREADS", "MKL_NUM_THREADS"])
@pytest.mark.parametrize(
    ("value", "says"),
    [("99999", "more than 256"), ("5000", "more than 256"), ("", "set but empty"),
     ("abc", "not a thread count"), ("0", "not a thread count")],
)  # fmt: skip
def test_a_bad_thread_variable_exits_2_before_anything_is_written(
    tmp_path: Path, name: str, value: str, says: str
) -> None:
    out = tmp_path / "run"
    done = train_process({name: value}, out)
    lines = errors(done.stderr)
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"foxhunt: error: {name}") and says in lines[0]
    assert "libgomp" not in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() and not list(tmp_path.glob(".run*")), "a folder or lock was left"


def test_a_count_above_the_cores_warns_once_and_is_recorded(tmp_path: Path) -> None:
    over = available_cores() + 1
    out = tmp_path / "run"
    done = train_process({"MKL_NUM_THREADS": str(over)}, out)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if " WARNING " in line]
    assert len([w for w in warnings if "threads" in w]) == 1, done.stderr
    assert f"more than the {available_cores()} usable cores" in done.stderr
    assert json.loads((out / "config.json").read_text())["training"]["threads"] == over


def test_a_run_records_its_count_and_a_resume_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "run"
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    tiny_job(out, tiny_run(training=tiny_training(threads=None)))
    assert json.loads((out / "config.json").read_text())["training"]["threads"] == 1
    # the default would now pick 2; a resume given no count keeps the recorded one
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    longer = tiny_run(training=tiny_training(threads=None, epochs=2))
    caplog.clear()  # the first job's line, where the logger's level let it through
    with caplog.at_level("INFO", logger="foxhunt.train"):
        tiny_job(out, longer, resume=True)
    said = [m for m in caplog.messages if m.startswith("threads: ")]
    assert said == [f"threads: 1 (recorded in {out / 'config.json'}; --threads N to change)"]
    assert json.loads((out / "config.json").read_text())["training"]["threads"] == 1


@pytest.mark.parametrize("legacy", [0, None])  # None: a config.json without the field
def test_an_older_run_saved_as_auto_resumes_as_auto(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, legacy: int | None
) -> None:
    out = tmp_path / "run"
    tiny_job(out)
    config = json.loads((out / "config.json").read_text())
    if legacy is None:
        del config["training"]["threads"]
    else:
        config["training"]["threads"] = legacy
    (out / "config.json").write_text(json.dumps(config))
    longer = tiny_run(training=tiny_training(threads=None, epochs=2))
    caplog.clear()  # the first job's line, where the logger's level let it through
    with caplog.at_level("INFO", logger="foxhunt.train"):
        tiny_job(out, longer, resume=True)
    said = [m for m in caplog.messages if m.startswith("threads: ")]
    # auto: this suite's OMP_NUM_THREADS=1 decides, as it did for runs saved with 0
    assert said == ["threads: 1 (OMP_NUM_THREADS=1)"], said
    assert json.loads((out / "config.json").read_text())["training"]["threads"] == 1


def test_a_bad_variable_under_overwrite_leaves_the_old_run_and_no_staging_folder(
    tmp_path: Path,
) -> None:
    """Before the check, OMP_NUM_THREADS=99999 under --overwrite left a `.run.new-*` folder."""
    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text("{}\n")
    done = train_process({"OMP_NUM_THREADS": "99999"}, out, "--overwrite")
    assert done.returncode == 2 and len(errors(done.stderr)) == 1, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert [p.name for p in out.iterdir()] == ["config.json"]
    assert (out / "config.json").read_text() == "{}\n"
