"""Issue 16, inputs and outputs: each reported as what it is, in one line, before any write."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import pytest
import torch

from foxhunt.training.finite import NonFiniteWeights, check_finite_weights

from .helpers import SMALL, cli, refused


def train_on(data: Path, out: Path, *extra: str) -> list[str]:
    return ["train", "--parquet-file", data, *SMALL, "--output-dir", out, *extra]


def make_input(kind: str, tmp: Path) -> Path:
    path = tmp / f"input-{kind}.parquet"
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # opening it would block forever
    elif kind == "symlink loop":
        os.symlink(path, path)
    elif kind == "dangling symlink":
        os.symlink(tmp / "gone", path)
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "header only":
        path = tmp / "header.csv"
        path.write_text("timestamp,open,high,low,close,volume\n")
    elif kind == "garbage":
        path.write_bytes(os.urandom(300))
    return path


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("folder", "is a folder"),
        ("fifo", "named pipe"),
        ("symlink loop", "symbolic link loop"),
        ("dangling symlink", "dangling symbolic link"),
        ("empty", "empty"),
        ("header only", "only a header"),
        ("garbage", "not a parquet/csv file"),
    ],
)
def test_a_bad_data_path_is_named_for_what_it_is(kind: str, says: str, tmp_path: Path) -> None:
    data = make_input(kind, tmp_path)
    refused(train_on(data, tmp_path / "out"), str(data.name), says)
    assert not (tmp_path / "out").exists()
    for command in ("predict", "evaluate"):
        refused([command, tmp_path / "run", "--parquet-file", data])


def test_an_output_dir_that_is_a_file(tmp_path: Path, bars_file: Path) -> None:
    (tmp_path / "f").write_text("mine")
    refused(train_on(bars_file, tmp_path / "f"), "is a file")
    refused(train_on(bars_file, tmp_path / "f" / "run"), "is a file")
    assert (tmp_path / "f").read_text() == "mine"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_output_dir(tmp_path: Path, bars_file: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir(mode=0o500)
    refused(train_on(bars_file, locked / "run"), "not writable")


def test_predict_output_that_is_a_folder(finished: Path, bars_file: Path) -> None:
    out = finished.parent / "here"
    out.mkdir()
    code, err = cli(["predict", finished, "--parquet-file", bars_file, "--output", out])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_early_stopping_without_validation_is_refused(tmp_path: Path, bars_file: Path) -> None:
    args = train_on(bars_file, tmp_path / "run", "--val-fraction", "0", "--patience", "2")
    refused(args, "--patience", "validation")
    args = train_on(bars_file, tmp_path / "run", "--val-fraction", "0", "--patience", "0")
    assert cli(args)[0] == 0  # early stopping explicitly off: trains every epoch


def test_non_finite_weights_stop_training() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2))
    check_finite_weights(model, 0)
    with torch.no_grad():
        model[0].bias[1] = math.inf
    with pytest.raises(NonFiniteWeights, match=r"0\.bias is NaN or inf after optimizer step 8"):
        check_finite_weights(model, 7)


def test_a_diverging_run_exits_2_and_saves_no_final_weights(
    tmp_path: Path, bars_file: Path
) -> None:
    refused(train_on(bars_file, tmp_path / "run", "--lr", "1e6", "--grad-clip", "0"), "diverged")
    assert not (tmp_path / "run" / "model.safetensors").exists()


def test_an_output_file_that_is_a_fifo_is_not_replaced(finished: Path, bars_file: Path) -> None:
    fifo = finished.parent / "out.csv"
    os.mkfifo(fifo)  # /dev/full was once silently replaced by a regular file this way
    refused(["predict", finished, "--parquet-file", bars_file, "--output", fifo], "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_checkpoint_storage_that_is_a_file(tmp_path: Path, bars_file: Path) -> None:
    (tmp_path / "f").write_text("mine")
    args = train_on(bars_file, tmp_path / "run", "--checkpoint-storage", str(tmp_path / "f"))
    refused(args, "--checkpoint-storage", "is a file")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "args", [["--lookback", "100000"], ["--hidden-size", "100000"], ["--batch-size", "10000000"]]
)
def test_bench_memory_refuses_what_cannot_fit(args: list[str]) -> None:
    refused(["bench-memory", *args, "--no-time", "--no-peak"], "GiB")


def test_a_finished_run_leaves_no_lock_or_staging_behind(finished: Path, bars_file: Path) -> None:
    code, err = cli(train_on(bars_file, finished, "--overwrite"))
    assert code == 0, err
    assert sorted(p.name for p in finished.parent.iterdir()) == ["run"]
