"""`foxhunt tune` end to end on the tiny built-in data: a study in SQLite, its folders,
best.yaml (which trains), its plots, and a second run that continues the same study."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from foxhunt.cli import main
from foxhunt.cli.resolve import resolve
from foxhunt.cli.train_config import run_config
from foxhunt.cli.tune import tune_command
from foxhunt.model.config import DATA_FIELDS
from foxhunt.runs import RunConfig
from foxhunt.tune import BEST_FILE, TuneConfig, open_study
from foxhunt.tune.report import HISTORY_PLOT, IMPORTANCE_PLOT, TRIALS_FILE
from helpers import TINY_CLI, tiny_job

FLAGS = [
    *TINY_CLI,
    "--synthetic-market",
    "garch",
    "--synthetic-days",
    "8",
    "--epochs",
    "1",
    "--max-steps-per-epoch",
    "2",
]
FLAGS += ["--device", "cpu", "--heartbeat", "1", "--sampler-seed", "0"]
SPACE = "training.lr: {low: 1e-4, high: 1e-2, log: true}\nmodel.hidden_size: {choices: [4, 8]}\n"


def tune(tmp_path: Path, *more: str) -> int:
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    out = ["--space", str(space), "--output-dir", str(tmp_path / "study")]
    return main(["tune", *FLAGS, *out, *more])


def study_of(tmp_path: Path) -> optuna.Study:
    return open_study(TuneConfig(), tmp_path / "study")  # the default storage: DIR/study.db


def test_a_study_keeps_the_best_trial_and_writes_its_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # no pruner: whether the median pruner stops a trial depends on the trials' losses
    # (test_pruning.py tests it); here every trial must finish
    assert tune(tmp_path, "--trials", "3", "--pruner", "none") == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines()[:3]] == [
        "trial 0",
        "trial 1",
        "trial 2",
    ]
    assert "| 3/3" in out.splitlines()[2] and "best " in out.splitlines()[2]
    study = study_of(tmp_path)
    trials = study.get_trials()
    assert len(trials) == 3 and all(t.state == TrialState.COMPLETE for t in trials)
    best = min(trials, key=lambda t: (t.value, t.number))
    folder = tmp_path / "study"
    assert sorted(p.name for p in folder.glob("trial-*")) == [f"trial-{best.number:04d}"]
    for name in (BEST_FILE, TRIALS_FILE, HISTORY_PLOT, IMPORTANCE_PLOT):
        assert (folder / name).stat().st_size > 100, name
    # best.yaml is RunConfig.to_dict(): the best trial's parameters, and it trains
    saved = yaml.safe_load((folder / BEST_FILE).read_text())
    config = RunConfig.from_dict(saved)
    assert config.training.lr == best.params["training.lr"]
    assert config.model.hidden_size == best.params["model.hidden_size"]
    result = tiny_job(tmp_path / "retrained", config)
    assert result.metrics["training"]["best_val_loss"] == pytest.approx(best.value, rel=1e-6)
    # --config takes it, the model's data-derived fields set aside (the job fills them again)
    # and the thread count the retraining ran at recorded (docs/performance.md, "Threads")
    retrained = tmp_path / "retrained" / "config.json"
    read = run_config(resolve(tune_command(), ["--config", str(retrained)])[1])
    assert isinstance(read.training.threads, int)
    ran = replace(config.training, threads=read.training.threads)
    unfitted = replace(config, model=replace(config.model, **dict.fromkeys(DATA_FIELDS)))
    assert read == replace(unfitted, training=ran)


def test_running_again_continues_the_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tune(tmp_path, "--trials", "1", "--keep", "all") == 0
    assert tune(tmp_path, "--trials", "1", "--keep", "all") == 0  # already done: no trial
    assert tune(tmp_path, "--trials", "2", "--keep", "all") == 0  # one more
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("trial ")][-1].startswith(
        "trial 1:"
    )
    assert sum(line.startswith("trial ") for line in out.splitlines()) == 2
    trials = study_of(tmp_path).get_trials()
    assert [t.number for t in trials] == [0, 1]
    assert all(t.state == TrialState.COMPLETE for t in trials)
    assert len(list((tmp_path / "study").glob("trial-*"))) == 2  # --keep all


def test_a_folder_holds_one_studys_trials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "study.json").write_text('{"storage": "sqlite:///elsewhere.db", "study_name": "a"}')
    (folder / "trial-0000").mkdir()  # study a's trial: never this study's to replace
    assert tune(tmp_path, "--trials", "1") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'a'" in err and "--output-dir" in err, err
    assert (folder / "trial-0000").is_dir() and not (folder / "study.db").exists()


def test_a_bad_storage_url_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tune(tmp_path, "--trials", "1", "--storage", "study.db") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--storage study.db" in err, err
