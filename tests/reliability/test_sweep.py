"""Issue 16, a second sweep: new cases of the issue's classes (data lost, silently wrong,
hangs, misleading messages) found after its fixes, each through the CLI."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from foxhunt.data import generate_bars

from .helpers import SMALL, cli, refused, snapshot, train

BACKTEST = [*(a for a in SMALL if a != "--no-report"), "--folds", "2", "--resamples", "10"]


def backtest(data: Path, out: Path) -> list[str]:
    return ["backtest", "--parquet-file", data, *BACKTEST, "--no-report", "--output-dir", out]


def test_an_output_file_never_replaces_a_file_of_the_run(
    finished: Path, bars_file: Path, tmp_path: Path
) -> None:
    """`evaluate RUN --json RUN/metrics.json` replaced the run's test metrics, exit 0."""
    before = snapshot(finished)
    evaluate = ["evaluate", finished, "--parquet-file", bars_file]
    refused([*evaluate, "--json", finished / "metrics.json"], "--json", "metrics.json")
    refused([*evaluate, "--forecasts", finished / "test_forecasts.parquet"], "--forecasts")
    refused([*evaluate, "--json", finished / "checkpoints" / "x.json"], "checkpoints")
    refused([*evaluate, "--json", finished / ".." / "run" / "config.json"], "config.json")
    predict = ["predict", finished, "--parquet-file", bars_file]
    refused([*predict, "--output", finished / "config.json"], "--output", "config.json")
    assert snapshot(finished) == before
    # a new file beside the run's is the user's choice; an impossible place names the output
    code, err = cli([*evaluate, "--json", finished / "evaluation.json"])
    assert code == 0 and (finished / "evaluation.json").is_file(), err
    refused([*evaluate, "--forecasts", tmp_path / "f.csv"], "f.csv", ".parquet")
    line = refused([*evaluate, "--json", "/proc/foxhunt-sweep.json"], "foxhunt-sweep.json")
    assert ".tmp" not in line


def test_backtest_folder_is_checked_locked_and_tied_to_its_data(
    tmp_path: Path, finished: Path, bars_file: Path
) -> None:
    """No lock (a second backtest deleted the first's fold in progress), a train run taken
    as a backtest folder, and a resume on changed bars that read old folds back silently."""
    run_files = snapshot(finished)
    refused(backtest(bars_file, finished), "holds a trained run")
    assert snapshot(finished) == run_files
    refused(backtest(bars_file, bars_file), "is a file")
    refused(backtest(bars_file, finished / "checkpoints"), "checkpoints")
    assert snapshot(finished) == run_files

    out = tmp_path / "bt"
    with open(tmp_path / ".bt.lock", "w") as lock:  # another process writing this backtest
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("4242\n")
        lock.flush()
        refused(backtest(bars_file, out), "another foxhunt process", "pid 4242")
    assert not out.exists()
    (tmp_path / ".bt.lock").unlink()

    data = tmp_path / "bars.parquet"
    generate_bars(days=6, seed=1).to_parquet(data)
    code, err = cli(backtest(data, out))
    assert code == 0, err
    done = snapshot(out)
    code, err = cli(backtest(data, out))  # resumed: every fold read back
    assert code == 0 and snapshot(out).keys() == done.keys(), err
    generate_bars(days=6, seed=2).to_parquet(data)  # same path, other bars
    done = snapshot(out)
    refused(backtest(data, out), str(data), "changed")
    assert snapshot(out) == done
    assert not (tmp_path / ".bt.lock").exists()


def test_a_glob_character_in_a_run_name_never_touches_another_run(
    tmp_path: Path, bars_file: Path
) -> None:
    """`.a*.new-*` matched run "ab"'s staging folder (deleted) and `.a*.old-*` its old copy
    (renamed to "a*"): a run named with * ? or [ reached into its neighbours."""
    parent = tmp_path / "runs"
    staging, old = parent / ".ab.new-1234abcd", parent / ".ab.old-1234abcd"
    for folder in (staging, old):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}\n")
    before = snapshot(parent)
    train(bars_file, parent / "a*")
    after = snapshot(parent)
    assert {k: v for k, v in after.items() if k.startswith(".ab.")} == before


def yaml_file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("model.hidden_size: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper"),
        (  # 10**9 values once expanded: the error message's repr of them never ended
            "training.lr: [&x0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "
            + ", ".join(f"&x{i} [{', '.join([f'*x{i - 1}'] * 10)}]" for i in range(1, 9))
            + "]\n",
            "aliases",
        ),
    ],
    ids=["deep", "alias bomb"],
)
def test_yaml_inputs_are_bounded(tmp_path: Path, text: str, says: str) -> None:
    """A deeply nested space was a RecursionError traceback; an alias bomb a hang."""
    bad = yaml_file(tmp_path, "bad.yaml", text)
    space = yaml_file(tmp_path, "space.yaml", "model.hidden_size: {choices: [4, 8]}\n")
    out = tmp_path / "study"
    tune = ["tune", "--trials", "1", "--output-dir", out]
    refused([*tune, "--space", bad, *SMALL[:-1]], "--space", says)
    refused([*tune, "--space", space, "--config", bad], "--config", says)
    assert not out.exists()


def test_tune_inputs_are_named_for_what_they_are(tmp_path: Path) -> None:
    """An empty --space was "data file is empty; pass OHLCV bars"; a FIFO as --config hung."""
    out = tmp_path / "study"
    space = yaml_file(tmp_path, "space.yaml", "model.hidden_size: {choices: [4, 8]}\n")
    tune = ["tune", "--trials", "1", "--output-dir", out]
    line = refused([*tune, "--space", yaml_file(tmp_path, "e.yaml", "")], "search space", "empty")
    assert "OHLCV" not in line
    line = refused([*tune, "--space", tmp_path], "search space", "is a folder")
    assert ".parquet" not in line
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)  # reading it would block forever
    refused([*tune, "--space", space, "--config", fifo], "config (--config)", "named pipe")
    assert not out.exists()


def test_report_names_a_bad_data_file_for_what_it_is(finished: Path, tmp_path: Path) -> None:
    """`report --parquet-file FOLDER` said the run's data "is gone; pass --parquet-file"."""
    before = snapshot(finished)
    refused(["report", finished, "--parquet-file", tmp_path], "is a folder")
    assert snapshot(finished) == before


def test_excel_serial_dates_are_not_read_as_1970(tmp_path: Path) -> None:
    """Excel serial days (45662.75) were read as epoch seconds: bars of 1970-01-01, 3 ms
    apart, trained with exit 0."""
    bars = generate_bars(days=6, seed=1)
    wall = bars["timestamp"].dt.tz_localize(None)
    bars["timestamp"] = (wall - pd.Timestamp("1899-12-30")) / pd.Timedelta(days=1)
    data = tmp_path / "excel.csv"
    bars.to_csv(data, index=False)
    refused(["train", "--parquet-file", data, *SMALL, "--output-dir", tmp_path / "out"],
            "excel.csv", "before 1971", "excel")  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["evaluate", "predict"])
def test_bars_of_another_spacing_are_refused(finished: Path, tmp_path: Path, command: str) -> None:
    """1-minute bars into a 5-minute model were scored, and forecast at 5-minute steps, exit 0
    (the issue's own example for predict)."""
    data = tmp_path / "one-minute.parquet"
    generate_bars(days=2, seed=1, bar_minutes=1).to_parquet(data)
    line = refused([command, finished, "--parquet-file", data], "one-minute.parquet", "apart")
    assert "0 days 00:01:00" in line and "0 days 00:05:00" in line


def test_a_path_that_is_not_utf8_is_read(finished: Path, bars_file: Path, tmp_path: Path) -> None:
    """A valid file under a non-UTF-8 name was refused as "not a Parquet/CSV file"."""
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/bars\xff.parquet"))
    shutil.copyfile(bars_file, odd)
    metrics = []
    for path in (odd, bars_file):
        out = tmp_path / f"metrics-{len(metrics)}.json"
        code, err = cli(["evaluate", finished, "--parquet-file", path, "--json", out])
        assert code == 0, err
        metrics.append(json.loads(out.read_text()))
    assert metrics[0].pop("source") == os.fsdecode(odd)  # read from the odd name ...
    metrics[1].pop("source")
    assert metrics[0] == metrics[1]  # ... the same bars as the plain one: the same scores


def test_a_semicolon_separated_csv_is_named_as_such(tmp_path: Path) -> None:
    data = tmp_path / "bars.csv"
    generate_bars(days=2, seed=1).to_csv(data, sep=";", index=False)
    refused(["train", "--parquet-file", data, *SMALL, "--output-dir", tmp_path / "r"], "';'")


def test_tune_never_takes_a_folder_holding_a_run_or_foreign_trials(
    tmp_path: Path, finished: Path, bars_file: Path
) -> None:
    """`--keep best` deleted a user's trial-0001/ in a fresh --output-dir, and a study was
    written into a trained run's folder, both with exit 0."""
    space = yaml_file(tmp_path, "space.yaml", "model.hidden_size: {choices: [4, 8]}\n")
    flags = ["--parquet-file", bars_file, *SMALL[:-1], "--trials", "2", "--space", space]
    before = snapshot(finished)
    refused(["tune", *flags, "--output-dir", finished], "config.json", "no study")
    refused(["tune", *flags, "--output-dir", finished / "report"], "report")
    assert snapshot(finished) == before
    mine = tmp_path / "study" / "trial-0001"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine\n")
    refused(["tune", *flags, "--output-dir", mine.parent], "trial-0001", "no study")
    assert snapshot(mine.parent) == {"trial-0001/notes.txt": b"mine\n"}


def test_an_export_never_lands_in_a_run_or_a_foreign_folder(finished: Path, tmp_path: Path) -> None:
    """`export RUN --dynamic --output OTHER_RUN` replaced OTHER_RUN's config.json and made it
    an int8 export of RUN (predict then served RUN's model from it); `--output
    RUN/checkpoints` wrote into the checkpoints; both exit 0."""
    other = tmp_path / "other"
    shutil.copytree(finished, other)
    (other / "config.json").write_text((other / "config.json").read_text() + " ")
    before, own = snapshot(other), snapshot(finished)
    export = ["export", finished, "--dynamic", "--output"]
    refused([*export, other], "--output", "not an int8 export")
    assert snapshot(other) == before
    refused([*export, finished / "checkpoints"], "checkpoints")
    refused([*export, finished / "checkpoints" / "int8"], "checkpoints")
    assert snapshot(finished) == own
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text("{}\n")
    refused([*export, mine], "not an int8 export")
    assert snapshot(mine) == {"config.json": b"{}\n"}
    for _ in range(2):  # the default folder, written again: an export replaces its own
        code, err = cli(["export", finished, "--dynamic"])
        assert code == 0, err
    refused(["export", finished, "--onnx", "--output", finished / "int8-dynamic"], "onnx")


def test_bench_memory_json_is_checked_before_measuring(finished: Path, tmp_path: Path) -> None:
    """`bench-memory --json FIFO` blocked in open() after the whole benchmark, and `--json
    RUN/metrics.json` replaced the run's metrics."""
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    bench = ["bench-memory", "--steps", "1", "--warmup", "0", "--json"]
    refused([*bench, fifo], "out.json", "FIFO")
    before = snapshot(finished)
    refused([*bench, finished / "metrics.json"], "metrics.json")
    assert snapshot(finished) == before
    refused([*bench, tmp_path / "p.json", "--predictions"], "--predictions")
    assert not (tmp_path / "p.json").exists()


def test_an_output_folder_name_too_long_is_named(tmp_path: Path) -> None:
    """A 250-byte --output-dir failed with "File name too long: .rrr....lock"."""
    out = tmp_path / ("r" * 250)
    line = refused(
        [
            "train",
            *SMALL,
            "--synthetic-market",
            "garch",
            "--synthetic-days",
            "4",
            "--output-dir",
            out,
        ],
        "250 bytes",
    )
    assert ".lock" not in line and not out.exists()


def _die(args: tuple[object, ...]) -> dict[str, object]:
    """A fold worker killed mid-fold (run in the spawned worker: importable by name)."""
    os._exit(9)


def test_a_dead_backtest_worker_is_one_line(
    tmp_path: Path, bars_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `--jobs 2` worker killed (kill -9, OOM) was `internal error: BrokenProcessPool`."""
    import foxhunt.backtest.runner as runner

    monkeypatch.setattr(runner, "_parallel_fold", _die)
    out = tmp_path / "bt"
    refused([*backtest(bars_file, out), "--jobs", "2"], "worker process died", "resume")


def test_report_refuses_bars_the_run_was_not_trained_on(finished: Path, tmp_path: Path) -> None:
    """The report rebuilt its test split from whatever the data path held: after the file
    changed (or with another --parquet-file) it described other bars, exit 0."""
    config = json.loads((finished / "config.json").read_text())
    trained_on = Path(config["data"]["path"])
    other = tmp_path / "other.parquet"
    generate_bars(days=6, seed=7).to_parquet(other)
    refused(["report", finished, "--parquet-file", other], "other.parquet", "not the data")
    moved = tmp_path / "moved.parquet"
    shutil.copy(trained_on, moved)
    code, err = cli(["report", finished, "--parquet-file", moved])  # the same bars, moved
    assert code == 0 and (finished / "report" / "report.html").is_file(), err


def test_an_unusable_torch_extensions_dir_falls_back_naming_it(
    finished: Path, bars_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TORCH_EXTENSIONS_DIR=/proc/x made predict exit 2 with "No such file or directory:
    /proc/x" (naming no variable); the kernel is optional, so the run goes on without it."""
    from foxhunt import cpp_kernels

    monkeypatch.setattr(cpp_kernels, "_built", {})
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", "/proc/foxhunt-sweep")
    with pytest.warns(RuntimeWarning, match="TORCH_EXTENSIONS_DIR"):
        code, err = cli(["predict", finished, "--parquet-file", bars_file])
    assert code == 0, err


def test_a_damaged_fold_result_says_what_to_do(tmp_path: Path, bars_file: Path) -> None:
    """A truncated folds/0/result.json was "the file is damaged", with no next step."""
    out = tmp_path / "bt"
    code, err = cli(backtest(bars_file, out))
    assert code == 0, err
    result = out / "folds" / "0" / "result.json"
    result.write_text(result.read_text()[:50])
    refused(backtest(bars_file, out), "result.json", f"remove the folder {out / 'folds' / '0'}")
    shutil.rmtree(out / "folds" / "0")
    code, err = cli(backtest(bars_file, out))  # fold 1 runs again, fold 2 is read back
    assert code == 0 and result.is_file(), err


def test_the_current_folder_as_output_dir_is_replaced_whole(
    tmp_path: Path, bars_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--output-dir .` put its lock inside the run ("./..lock"): `--overwrite` then refused,
    calling the lock a file foxhunt did not write."""
    run = tmp_path / "here"
    run.mkdir()
    monkeypatch.chdir(run)
    train(bars_file, Path("."))
    before = snapshot(run)
    train(bars_file, Path("."), "--overwrite", "--seed", "5")
    after = snapshot(run)
    assert after.keys() == before.keys() and after != before
    assert not list(tmp_path.glob(".here.*")) and not list(run.glob(".*"))


def test_a_run_is_never_written_inside_another_run(
    finished: Path, bars_file: Path, tmp_path: Path
) -> None:
    """`train --output-dir RUN/checkpoints/x` wrote a whole run into the other's checkpoints."""
    before = snapshot(finished)
    args = ["train", "--parquet-file", bars_file, *SMALL]
    refused([*args, "--output-dir", finished / "checkpoints" / "x"], "inside the run folder")
    refused([*args, "--output-dir", finished / "sub"], "inside the run folder")
    assert snapshot(finished) == before
    (tmp_path / "home" / "checkpoints").mkdir(parents=True)  # a folder name alone is no run
    train(bars_file, tmp_path / "home" / "runs" / "r")
