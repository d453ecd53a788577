"""Issue 16, "data lost": an existing run survives every refused or interrupted train."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest

from foxhunt.runs import RunFolder
from foxhunt.storage.local import LocalStorage

from .helpers import SMALL, cli, refused, snapshot, train


def test_overwrite_with_a_mistyped_data_file_keeps_the_old_run(
    finished: Path, tmp_path: Path
) -> None:
    before = snapshot(finished)
    args = ["train", "--parquet-file", tmp_path / "typo.parquet", *SMALL]
    refused([*args, "--output-dir", finished, "--overwrite"], "typo.parquet", "not found")
    assert snapshot(finished) == before


def test_overwrite_with_an_invalid_data_file_keeps_the_old_run(
    finished: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,open,high,low,close,volume\n")  # header only
    before = snapshot(finished)
    refused(["train", "--parquet-file", bad, *SMALL, "--output-dir", finished, "--overwrite"])
    assert snapshot(finished) == before
    assert not list(finished.parent.glob(".run.new-*")), "the staged run was not cleaned up"


@pytest.mark.parametrize("removed", ["checkpoints", "model.safetensors", "metrics.json"])
def test_any_run_file_makes_a_run(finished: Path, bars_file: Path, removed: str) -> None:
    target = finished / removed
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    before = snapshot(finished)
    refused(["train", "--parquet-file", bars_file, *SMALL, "--output-dir", finished], "--resume")
    assert snapshot(finished) == before


def test_overwrite_replaces_the_run_whole_only_when_complete(
    finished: Path, bars_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(finished)
    # the job module `foxhunt train` calls (foxhunt.jobs.train the attribute is the function)
    job = importlib.import_module("foxhunt.jobs.train")

    real = job.train

    def killed(*args: object, **kwargs: object) -> object:
        real(*args, **kwargs)  # the new run is complete in its staging folder...
        raise KeyboardInterrupt  # ...and the process dies before the swap

    monkeypatch.setattr(job, "train", killed)
    args = ["train", "--parquet-file", bars_file, *SMALL, "--lookback", "12"]
    code, _ = cli([*args, "--output-dir", finished, "--overwrite"])
    assert code == 130
    assert snapshot(finished) == before
    monkeypatch.setattr(job, "train", real)
    train(bars_file, finished, "--lookback", "12", "--overwrite")
    assert json.loads((finished / "config.json").read_text())["data"]["lookback"] == 12
    assert not [p for p in finished.parent.iterdir() if ".new-" in p.name or ".old-" in p.name]


def test_overwrite_keeps_files_foxhunt_did_not_write(finished: Path, bars_file: Path) -> None:
    (finished / "notes.txt").write_text("mine")
    before = snapshot(finished)
    args = ["train", "--parquet-file", bars_file, *SMALL, "--output-dir", finished]
    refused([*args, "--overwrite"], "notes.txt")
    assert snapshot(finished) == before


def test_one_writer_per_run_folder(finished: Path, bars_file: Path) -> None:
    before = snapshot(finished)
    with RunFolder(finished, mode="resume"):  # another process holds the run
        args = ["train", "--parquet-file", bars_file, *SMALL, "--epochs", "2"]
        line = refused([*args, "--resume", finished], "another foxhunt process", "pid")
        refused([*args, "--output-dir", finished, "--overwrite"], "another foxhunt process")
    import os

    assert str(os.getpid()) in line
    assert snapshot(finished) == before


def test_a_stale_lock_of_a_dead_process_is_no_obstacle(tmp_path: Path, bars_file: Path) -> None:
    run = tmp_path / "run"
    (tmp_path / ".run.lock").write_text("999999\n")  # its process died: the flock is gone
    train(bars_file, run)
    assert (run / "model.safetensors").is_file()


def test_shared_checkpoint_storage_keeps_runs_apart(tmp_path: Path, bars_file: Path) -> None:
    shared = tmp_path / "ckpt"
    flags = ["--checkpoint-storage", str(shared), "--checkpoint-every", "1"]
    train(bars_file, tmp_path / "a", *flags, "--keep-checkpoints", "1")
    ids = [p.name for p in shared.iterdir()]
    a_before = snapshot(shared / ids[0])
    train(bars_file, tmp_path / "b", *flags, "--keep-checkpoints", "1")
    a_id = json.loads((tmp_path / "a" / "identity.json").read_text())["run_id"]
    assert a_id == ids[0]
    assert snapshot(shared / a_id) == a_before, "run b pruned or overwrote run a's checkpoints"
    b_id = json.loads((tmp_path / "b" / "identity.json").read_text())["run_id"]
    # a checkpoint of run b put where run a's live: resume refuses it, naming both runs
    storage_a, storage_b = LocalStorage(shared / a_id), LocalStorage(shared / b_id)
    for name in storage_a.list():
        storage_a.delete(name)
    last = storage_b.list()[-1]
    shutil.copytree(shared / b_id / last, shared / a_id / "step-999999999")
    args = ["train", "--parquet-file", bars_file, *SMALL, "--epochs", "2", *flags]
    refused([*args, "--resume", tmp_path / "a"], a_id, b_id)


def test_resume_refuses_a_changed_data_file(tmp_path: Path) -> None:
    from foxhunt.data import generate_bars

    bars = tmp_path / "bars.parquet"
    generate_bars(days=6, seed=1).to_parquet(bars)
    train(bars, tmp_path / "run")
    generate_bars(days=6, seed=2).to_parquet(bars)  # same path, other content
    args = ["train", "--parquet-file", bars, *SMALL, "--epochs", "2"]
    refused([*args, "--resume", tmp_path / "run"], "bars.parquet", "not the data")


def test_a_run_saved_before_identities_resumes_saying_the_data_is_unchecked(
    finished: Path, bars_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import argparse

    from foxhunt.cli.train import run_identity
    from foxhunt.runs import read_run_config

    config = read_run_config(finished)
    (finished / "identity.json").unlink()  # as a run folder saved before identities
    args = argparse.Namespace(resume=finished, data_file=bars_file)
    with caplog.at_level("WARNING", logger="foxhunt"):
        identity = run_identity(finished, config, args)
    assert "cannot be checked" in caplog.text  # said, not silent
    assert identity["data"]  # a fresh identity with this file's fingerprint, saved by the job


def epoch_records(run: Path) -> list[dict]:
    lines = (run / "history.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == "epoch"]


def test_resume_from_a_step(finished: Path, bars_file: Path) -> None:
    """The run (3 steps, checkpoints at step 2 and at the epoch's end, step 3) continues from
    step 2, not from its last checkpoint: epoch 1 ends again, with the same losses."""
    args = ["train", "--parquet-file", bars_file, *SMALL, "--epochs", "2", "--resume", finished]
    refused([*args, "--resume-from", "7"], "--resume-from 7", "steps [")
    first = epoch_records(finished)
    assert [r["epoch"] for r in first] == [0]
    killed = finished / "checkpoints" / ".tmp-step-000000009-0badf00d"  # a save killed mid-write
    killed.mkdir()
    (killed / "model.safetensors").write_bytes(b"half")
    code, err = cli([*args, "--resume-from", "2"])
    assert code == 0, err
    assert not killed.exists()  # the resume cleared it
    assert "step-000000002: epoch 1, batch 2, step 2" in err  # the INFO line naming it
    resumed = epoch_records(finished)[len(first) :]
    assert [r["epoch"] for r in resumed] == [0, 1]  # from the last checkpoint: [1] only
    for key in ("train_loss", "val_loss"):
        assert resumed[0][key] == pytest.approx(first[0][key], rel=1e-6), key


def test_no_checkpoint_names_the_folder_and_the_next_step(finished: Path, bars_file: Path) -> None:
    shutil.rmtree(finished / "checkpoints")
    (finished / "checkpoints").mkdir()
    args = ["train", "--parquet-file", bars_file, *SMALL, "--epochs", "2"]
    refused([*args, "--resume", finished], str(finished / "checkpoints"), "--overwrite")


def test_a_second_process_is_refused_naming_the_holder(finished: Path, bars_file: Path) -> None:
    """Two real processes: the holder is another interpreter, not this test."""
    import subprocess
    import sys

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from foxhunt.runs import "
            "RunFolder\nwith RunFolder(Path(sys.argv[1]), mode='resume'):\n"
            "    print('locked', flush=True); time.sleep(60)",
            str(finished),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        args = ["train", "--parquet-file", bars_file, *SMALL, "--output-dir", finished]
        refused([*args, "--overwrite"], f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()
    train(bars_file, finished, "--overwrite")  # the OS released the dead holder's lock


KILL_BETWEEN_RENAMES = """
import os, pathlib, sys
real = pathlib.Path.rename
def rename(self, target):
    if ".new-" in self.name:  # the second rename of the swap: die as kill -9 would
        os._exit(137)
    return real(self, target)
pathlib.Path.rename = rename
from foxhunt.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_kill_between_the_two_renames_is_repaired_by_the_next_writer(
    finished: Path, bars_file: Path
) -> None:
    """The swap's window of risk, forced: the old run moved aside, the new one not yet in
    place, the process gone (no cleanup). The next writer puts the old run back."""
    import subprocess
    import sys

    before = snapshot(finished)
    args = ["train", "--parquet-file", bars_file, *SMALL, "--lookback", "12"]
    args += ["--output-dir", finished, "--overwrite"]
    done = subprocess.run(
        [sys.executable, "-c", KILL_BETWEEN_RENAMES, *map(str, args)], capture_output=True
    )
    assert done.returncode == 137, done.stderr.decode()[-2000:]
    parent = finished.parent
    assert not finished.exists()  # exactly the state between the renames
    assert [p.name.startswith(".run.old-") for p in parent.iterdir() if p.is_dir()].count(True) == 1
    # the next writer (here one that is then refused: the folder holds a run) repairs first
    refused(["train", "--parquet-file", bars_file, *SMALL, "--output-dir", finished], "--resume")
    assert snapshot(finished) == before
    assert not [p for p in parent.iterdir() if ".new-" in p.name or ".old-" in p.name]
