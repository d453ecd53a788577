"""Fuzz: mutated run folders and checkpoints are refused with exit 2 in one line, or load
correctly; never a traceback, never a read outside the folder, never a change to it."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from .helpers import SMALL, cli, snapshot

HOSTILE = [None, -1, 0, 10**20, 1e308, float("nan"), "x", [], {}, True, "../../etc/hostname"]
FUZZ = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture
def copies(trained_run: Path) -> Iterator[Any]:
    def fresh() -> tuple[Path, Path]:
        root = Path(tempfile.mkdtemp(prefix="fuzz-"))
        (root / "outside.txt").write_text("must stay")
        shutil.copytree(trained_run, root / "run", symlinks=True)
        return root, root / "run"

    made: list[Path] = []

    def make() -> tuple[Path, Path]:
        root, run = fresh()
        made.append(root)
        return root, run

    yield make
    for root in made:
        shutil.rmtree(root, ignore_errors=True)


def leaves(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a JSON document (containers included)."""
    out = [path] if path else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):
            out += leaves(v, (*path, i))
    return out


def set_path(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def checkpoints(run: Path) -> list[Path]:
    return sorted(p for p in (run / "checkpoints").iterdir() if p.is_dir())


def assert_clean_outcome(root: Path, args: list[Any]) -> None:
    code, err = cli(args)
    assert "Traceback" not in err and "internal error" not in err, err
    assert code in (0, 2), err
    if code == 2:
        assert len([x for x in err.splitlines() if x.startswith("foxhunt: error:")]) == 1, err
    assert (root / "outside.txt").read_text() == "must stay"


@FUZZ
@given(data=st.data())
def test_mutated_json_fields(copies: Any, bars_file: Path, data: st.DataObject) -> None:
    root, run = copies()
    ckpt = checkpoints(run)[-1]
    name = data.draw(
        st.sampled_from(["config.json", "preprocessor.json", "identity.json", "manifest"])
    )
    path = ckpt / "manifest.json" if name == "manifest" else run / name
    doc = json.loads(path.read_text())
    key = data.draw(st.sampled_from(leaves(doc)))
    set_path(doc, key, data.draw(st.sampled_from(HOSTILE)))
    path.write_text(json.dumps(doc))
    before = snapshot(run)
    if name in ("manifest", "identity.json"):
        args = ["train", "--parquet-file", bars_file, *SMALL, "--epochs", "2", "--resume", run]
        assert_clean_outcome(root, args)
    else:
        assert_clean_outcome(root, ["predict", run, "--parquet-file", bars_file])
        assert snapshot(run) == before, "predict changed the run folder"


@FUZZ
@given(data=st.data())
def test_mutated_tensors_and_files(copies: Any, bars_file: Path, data: st.DataObject) -> None:
    root, run = copies()
    ckpts = checkpoints(run)
    action = data.draw(
        st.sampled_from(["nan", "reshape", "drop", "extra", "swap", "delete", "truncate", "link"])
    )
    weights = run / "model.safetensors"
    state = load_file(weights)
    key = data.draw(st.sampled_from(sorted(state)))
    if action == "nan":
        state[key] = state[key] * float("nan")
    elif action == "reshape":
        state[key] = state[key].reshape(-1)[:-1] if state[key].numel() > 1 else state[key][:0]
    elif action == "drop":
        del state[key]
    elif action == "extra":
        state["attacker.weight"] = state[key].clone()
    if action in ("nan", "reshape", "drop", "extra"):
        save_file(state, weights)
    elif action == "swap":  # the optimizer's tensors where the weights should be
        shutil.copy(ckpts[-1] / "optimizer.safetensors", weights)
    elif action == "delete":
        (run / data.draw(st.sampled_from(["preprocessor.json", "config.json"]))).unlink()
    elif action == "truncate":
        weights.write_bytes(weights.read_bytes()[: data.draw(st.integers(0, 400))])
    elif action == "link":
        weights.unlink()
        weights.symlink_to(root / "outside.txt")
    before = snapshot(run)
    assert_clean_outcome(root, ["predict", run, "--parquet-file", bars_file])
    assert snapshot(run) == before
    # and the same class of damage inside the last checkpoint, through --resume
    target = ckpts[-1] / data.draw(
        st.sampled_from(["model.safetensors", "optimizer.safetensors", "state.json"])
    )
    mode = data.draw(st.sampled_from(["truncate", "link", "delete", "flip"]))
    if mode == "truncate":
        target.write_bytes(target.read_bytes()[:50])
    elif mode == "link":
        target.unlink()
        target.symlink_to(Path("/etc/hostname"))
    elif mode == "delete":
        target.unlink()
    else:
        blob = bytearray(target.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        target.write_bytes(bytes(blob))
    args = ["train", "--parquet-file", bars_file, *SMALL, "--epochs", "2", "--resume", run]
    assert_clean_outcome(root, args)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_mutated_report_and_evaluate_inputs(
    copies: Any, bars_file: Path, data: st.DataObject
) -> None:
    root, run = copies()
    name = data.draw(st.sampled_from(["metrics.json", "baseline.json", "history.jsonl"]))
    path = run / name
    if name == "history.jsonl":
        lines = path.read_text().splitlines()
        record = json.loads(data.draw(st.sampled_from(lines)))
        key = data.draw(st.sampled_from(sorted(record)))
        record[key] = data.draw(st.sampled_from(HOSTILE))
        extra = data.draw(st.sampled_from([json.dumps(record), "garbage", "[1]", ""]))
        path.write_text("\n".join([*lines, extra]) + "\n")
    else:
        doc = json.loads(path.read_text())
        set_path(doc, data.draw(st.sampled_from(leaves(doc))), data.draw(st.sampled_from(HOSTILE)))
        path.write_text(json.dumps(doc))
    command = ["report", run] if name != "baseline.json" else ["evaluate", run]
    assert_clean_outcome(root, [*command, "--parquet-file", bars_file])
