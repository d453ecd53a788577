"""Issue 31, "data lost": a refused resume, an export into an existing export folder and a
tune whose database is gone each leave what was there as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import optuna
import pytest

from .helpers import SMALL, cli, refused, snapshot


def test_a_refused_resume_keeps_the_run_config(finished: Path, bars_file: Path) -> None:
    """`train --resume RUN --lr 0.01` was refused by the checkpoint after config.json held
    the refused settings."""
    before = snapshot(finished)
    args = ["train", "--parquet-file", bars_file, *SMALL, "--resume", finished]
    refused([*args, "--lr", "0.01"], "training.lr", "--resume")
    refused([*args, "--hidden-size", "12"], "model.hidden_size")
    assert snapshot(finished) == before
    code, err = cli([*args, "--epochs", "2"])  # a change a resume may make
    assert code == 0, err
    assert json.loads((finished / "config.json").read_text())["training"]["epochs"] == 2


def test_a_resume_its_checkpoint_refuses_keeps_the_run_config(
    finished: Path, bars_file: Path, tmp_path: Path
) -> None:
    """A config.json edited to agree with the resume's settings passed the config.json check;
    the job rewrote it, then the checkpoint refused them (issue 42's second sweep)."""
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    config = json.loads((run / "config.json").read_text())
    config["training"]["lr"] = 0.01
    (run / "config.json").write_text(json.dumps(config))
    before = snapshot(run)
    args = ["train", "--parquet-file", bars_file, *SMALL, "--resume", run, "--lr", "0.01"]
    refused(args, "training.lr", "checkpoint", "config.json is left as it was")
    assert snapshot(run) == before


def export_kind(folder: Path) -> str:
    if (folder / "quantization.json").is_file():
        return str(json.loads((folder / "quantization.json").read_text())["mode"])
    return str(json.loads((folder / "onnx_export.json").read_text())["precision"])


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, trained_run: Path) -> dict[str, Path]:
    """An FP32 ONNX export and a dynamic int8 export of the session's run (made once)."""
    out = tmp_path_factory.mktemp("exports")
    folders = {"onnx": out / "onnx", "dynamic": out / "dynamic"}
    assert cli(["export", trained_run, "--onnx", "--output", folders["onnx"]])[0] == 0
    assert cli(["export", trained_run, "--dynamic", "--output", folders["dynamic"]])[0] == 0
    return folders


# every export flag, into a folder holding an export of another kind
OTHER_KIND = [
    (["--onnx"], "dynamic"),
    (["--dynamic"], "onnx"),
    (["--int8"], "onnx"),
    (["--onnx", "--int8"], "dynamic"),
]


@pytest.mark.parametrize(("flags", "held"), OTHER_KIND, ids=lambda v: " ".join(v))
def test_an_export_never_replaces_one_of_another_kind(
    tmp_path: Path, trained_run: Path, exported: dict[str, Path], flags: list[str], held: str
) -> None:
    """`export --onnx RUN --output RUN/onnx-int8` replaced the int8 export with FP32, exit 0."""
    folder = tmp_path / "exp"
    shutil.copytree(exported[held], folder)
    before = snapshot(folder)
    refused(["export", trained_run, *flags, "--output", folder], str(folder), "--overwrite")
    assert snapshot(folder) == before


def test_an_export_of_another_run_needs_overwrite(
    tmp_path: Path, finished: Path, exported: dict[str, Path]
) -> None:
    folder = tmp_path / "exp"
    shutil.copytree(exported["dynamic"], folder)
    before = snapshot(folder)
    # `finished` is a copy of the exported run in another folder: another run, by its path
    refused(["export", finished, "--dynamic", "--output", folder], "--overwrite", str(finished))
    assert snapshot(folder) == before
    code, err = cli(["export", finished, "--dynamic", "--output", folder, "--overwrite"])
    assert code == 0, err
    spec = json.loads((folder / "quantization.json").read_text())
    assert Path(spec["source"]).resolve() == finished.resolve()


def test_overwrite_replaces_an_export_whole(
    tmp_path: Path, trained_run: Path, exported: dict[str, Path]
) -> None:
    folder = tmp_path / "exp"
    shutil.copytree(exported["onnx"], folder)
    code, err = cli(["export", trained_run, "--dynamic", "--output", folder, "--overwrite"])
    assert code == 0, err
    assert export_kind(folder) == "dynamic"
    assert not (folder / "model.onnx").exists(), "a file of the replaced export stayed"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"], "staging left behind"
    # the same kind of the same run is written again without --overwrite
    code, err = cli(["export", trained_run, "--dynamic", "--output", folder])
    assert code == 0, err


def test_a_failed_export_leaves_the_earlier_one(
    tmp_path: Path, finished: Path, exported: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import foxhunt.exports.int8 as int8

    folder = tmp_path / "out" / "exp"
    shutil.copytree(exported["dynamic"], folder)
    before = snapshot(folder)

    def killed(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(int8, "save_safetensors", killed)
    code, _ = cli(["export", finished, "--dynamic", "--output", folder, "--overwrite"])
    assert code == 130
    assert snapshot(folder) == before
    assert sorted(p.name for p in folder.parent.iterdir()) == ["exp"], "staging left behind"


def space_file(tmp_path: Path) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text("model.hidden_size: {choices: [4, 8]}\n")
    return path


def tune(tmp_path: Path, bars: Path, out: Path, *extra: str) -> list[str | Path]:
    flags = ["--parquet-file", bars, *SMALL[:-1], "--space", space_file(tmp_path)]
    return ["tune", *flags, "--trials", "1", "--output-dir", out, *extra]


def tune_ok(args: list[str | Path]) -> str:
    import contextlib
    import io

    from foxhunt.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    text = out.getvalue() + err.getvalue()
    assert code == 0, text
    return text


def without_db(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if k != "study.db"}


def test_a_study_whose_database_is_gone_keeps_its_results(tmp_path: Path, bars_file: Path) -> None:
    """A tune into a folder whose study.db was deleted started a new study at trial 0 and
    deleted the earlier best trial's folder and best.yaml."""
    out = tmp_path / "study"
    tune_ok(tune(tmp_path, bars_file, out))
    assert (out / "best.yaml").is_file() and (out / "trial-0000").is_dir()
    # a study.json lost too, and another --study-name over the database: a new, empty study
    claim = (out / "study.json").read_bytes()
    (out / "study.json").unlink()
    before = without_db(snapshot(out))
    refused(tune(tmp_path, bars_file, out, "--study-name", "other"), "trial-0000", "no trials")
    assert without_db(snapshot(out)) == before
    assert optuna.get_all_study_names(f"sqlite:///{out / 'study.db'}") == ["foxhunt"]
    (out / "study.json").write_bytes(claim)
    (out / "study.db").unlink()
    before = snapshot(out)
    refused(tune(tmp_path, bars_file, out), "study.db", "is gone", "--output-dir")
    assert snapshot(out) == before


def test_an_in_memory_study_runs_once_per_folder(tmp_path: Path, bars_file: Path) -> None:
    """`--storage sqlite://` printed `no such table: trial_heartbeats` every trial; a second
    run into its folder started again and deleted the first's results; a failed --storage
    left a study.json that refused every later attempt."""
    out = tmp_path / "study"
    refused(tune(tmp_path, bars_file, out, "--storage", "sqlite:////nonexistent/x.db"), "--storage")
    assert not Path("/nonexistent").exists()
    assert not (out / "study.json").exists(), "a failed --storage claimed the folder"
    text = tune_ok(tune(tmp_path, bars_file, out, "--storage", "sqlite://"))
    assert "trial_heartbeats" not in text and "Traceback" not in text, text
    before = snapshot(out)
    refused(tune(tmp_path, bars_file, out, "--storage", "sqlite://"), "in-memory", "--output-dir")
    assert snapshot(out) == before
