"""The study survives its workers: a worker killed (-9) in the middle of a trial leaves that
trial FAIL and uncounted, a restart completes exactly the trials asked for, and two workers
on one SQLite study share them. Each worker is its own process (worker.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from foxhunt.tune import TuneConfig, open_study

WORKER = str(Path(__file__).with_name("worker.py"))
TRIALS = 3


def start(folder: Path, *flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, WORKER, str(folder), str(TRIALS), *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(worker: subprocess.Popen[str]) -> str:
    out, err = worker.communicate(timeout=240)
    assert worker.returncode == 0, err[-2000:]
    return out


def states(folder: Path) -> list[TrialState]:
    study = open_study(TuneConfig(heartbeat=1), folder)
    return [t.state for t in study.get_trials()]


@pytest.mark.slow  # three processes, each importing torch: ~10 s of CPU
def test_killed_during_a_trial_then_restarted(tmp_path: Path) -> None:
    worker = start(tmp_path, "--hang-at", "1")
    deadline = time.monotonic() + 240
    while not (tmp_path / "hanging").exists():  # trial 1 is past its first epoch, blocked
        assert worker.poll() is None, worker.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "trial 1 never started"
        time.sleep(0.1)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    assert states(tmp_path) == [TrialState.COMPLETE, TrialState.RUNNING]
    out = finish(start(tmp_path))  # a fresh process on the same study
    study = open_study(TuneConfig(heartbeat=1), tmp_path)
    trials = study.get_trials()
    assert trials[1].state == TrialState.FAIL  # its heartbeat stopped: failed, not counted
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == TRIALS
    assert len({t.number for t in finished}) == TRIALS  # no trial counted twice
    # the killed trial's parameters were tried again, once, as a new trial
    retried = [t for t in trials[2:] if t.params == trials[1].params]
    assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE
    assert [line.split(":")[0] for line in out.splitlines()] == ["trial 2", "trial 3"]


@pytest.mark.slow
def test_two_workers_share_one_study(tmp_path: Path) -> None:
    workers = [start(tmp_path, "--meet", "2") for _ in range(2)]
    lines = [finish(worker).splitlines() for worker in workers]
    assert all(lines), lines  # each worker ran trials (their first ones ran together)
    study = open_study(TuneConfig(heartbeat=1), tmp_path)
    trials = study.get_trials()
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == TRIALS
    assert sum(len(w) for w in lines) == len(trials)  # one line per trial, each run once
    assert not [t for t in trials if t.state == TrialState.FAIL and not t.user_attrs.get("surplus")]
