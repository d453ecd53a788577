"""Issue 16, loading: every file of a run folder and of a checkpoint is checked; a damaged,
mismatched or hostile one is refused with one line naming file and field."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from safetensors.torch import load_file, save_file

from foxhunt.migrations import SPEC_BEFORE_GROUPS

from .helpers import SMALL, cli, refused, snapshot


def predict(run: Path, bars: Path) -> list[str]:
    return ["predict", run, "--parquet-file", bars]


def edit_json(path: Path, change: dict[str, object], section: str | None = None) -> None:
    data = json.loads(path.read_text())
    (data[section] if section else data).update(change)
    path.write_text(json.dumps(data))


def test_weights_that_disagree_with_config_are_refused(finished: Path, bars_file: Path) -> None:
    edit_json(finished / "config.json", {"hidden_size": 12}, "model")
    refused(predict(finished, bars_file), "model.safetensors", "shape")


def test_a_lookback_swapped_in_by_a_killed_overwrite_is_refused(
    finished: Path, bars_file: Path
) -> None:
    for section in ("data", "model"):
        edit_json(finished / "config.json", {"lookback": 12}, section)
    # same tensor shapes: the preprocessor's window gives the mismatch away
    refused(predict(finished, bars_file), "different runs")


@pytest.mark.parametrize("hidden", [40_000, 10**7])
def test_a_config_too_large_for_memory_is_refused_with_its_size(
    finished: Path, bars_file: Path, hidden: int
) -> None:
    edit_json(finished / "config.json", {"hidden_size": hidden}, "model")
    refused(predict(finished, bars_file), f"hidden_size={hidden}", "GiB")


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("hidden_size", 10**9, "too large to represent"),  # int64 overflow in a weight's size
        ("num_past", 10**20, "num_past"),
        ("horizon", 2**31 - 1, "horizon"),  # the causal mask alone: H x (L + H) bytes
        ("horizon", 10**9, "GiB"),
        ("lstm_layers", 2**31 - 1, "lstm_layers"),  # a module per layer: never built
        ("static_cardinalities", [10**20], "static_cardinalities"),
        ("vol_signals", 10**20, "vol_signals"),
    ],
)
def test_absurd_model_sizes_are_refused_before_anything_is_built(
    finished: Path, bars_file: Path, field: str, value: object, says: str
) -> None:
    edit_json(finished / "config.json", {field: value}, "model")
    refused(predict(finished, bars_file), "config.json" if says != "GiB" else "GiB", says)


def test_config_names_the_model_class_and_a_run_without_it_loads_as_the_tft(
    finished: Path, bars_file: Path
) -> None:
    config = json.loads((finished / "config.json").read_text())
    assert config["model_class"] == "tft"
    del config["model_class"]  # as runs written before the model factory
    (finished / "config.json").write_text(json.dumps(config))
    code, err = cli(predict(finished, bars_file))
    assert code == 0, err


@pytest.mark.parametrize("name", ["lstm", 3, None])
def test_an_unknown_model_class_is_refused(finished: Path, bars_file: Path, name: object) -> None:
    edit_json(finished / "config.json", {"model_class": name})
    refused(
        predict(finished, bars_file), "config.json", "model_class" if name != "lstm" else "lstm"
    )


def test_unknown_config_section_is_refused(finished: Path, bars_file: Path) -> None:
    edit_json(finished / "config.json", {"optimizer": {"lr": 1}})
    refused(predict(finished, bars_file), "config.json", "optimizer")


#: a preprocessor.json spec of today's fields (foxhunt/migrations.py), without groups
SPEC = {"observed_columns": [], "known_columns": [], "calendar": None, **SPEC_BEFORE_GROUPS}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"target_scaler": {"scale": 0.0}}, "target_scaler.scale"),
        ({"target_scaler": {"scale": float("nan")}}, "target_scaler.scale"),
        ({"target_scaler": {"scale": "big"}}, "preprocessor.json"),
        ({"lookback": 99}, "lookback"),
        ({"scaler": None}, "preprocessor.json"),
        ({"bar_spacing_ns": 10**20}, "bar_spacing_ns"),
        ({"baseline_window": 10**20}, "baseline_window"),
        ({"profile": {"bucket_minutes": 5, "values": [float("nan")] * 288}}, "profile.values"),
        ({"profile": {"bucket_minutes": 10**20, "values": [1.0]}}, "profile.bucket_minutes"),
        ({"fast_window": 10**20}, "fast_window"),
        ({"fast_window": 1}, "fast_window"),
        ({"version": 5, "base": "garch"}, "base 'garch' is not one of"),
        ({"version": 5, "base": 3}, "'base'"),
        ({"version": 5, "base": "auto"}, "'base'"),
        (
            {"spec": {**SPEC, "volatility_windows": [10**20]}},
            "volatility_windows",
        ),
        (
            {"spec": {**SPEC, "volatility_windows": [-1]}},
            "volatility_windows",
        ),
    ],
)
def test_preprocessor_fields_are_checked(
    finished: Path, bars_file: Path, change: dict[str, object], field: str
) -> None:
    edit_json(finished / "preprocessor.json", change)
    refused(predict(finished, bars_file), "preprocessor.json", field)


def test_preprocessor_std_must_be_positive(finished: Path, bars_file: Path) -> None:
    path = finished / "preprocessor.json"
    data = json.loads(path.read_text())
    data["scaler"]["std"][0] = -1.0
    path.write_text(json.dumps(data))
    refused(predict(finished, bars_file), "scaler.std")


def test_a_scaler_of_other_inputs_than_the_spec_computes_is_refused(
    finished: Path, bars_file: Path
) -> None:
    """A run saved before a group gained an input (cross_fresh): one line, not a shape error."""
    path = finished / "preprocessor.json"
    data = json.loads(path.read_text())
    data["scaler"]["names"][-1] = "cross_fresh"
    path.write_text(json.dumps(data))
    refused(predict(finished, bars_file), "preprocessor.json", "cross_fresh", "retrain")


def test_non_finite_weights_are_refused(finished: Path, bars_file: Path) -> None:
    path = finished / "model.safetensors"
    state = load_file(path)
    name = next(iter(state))
    state[name] = state[name] * float("nan")
    save_file(state, path)
    refused(predict(finished, bars_file), name, "NaN")


def test_oversized_json_is_refused_before_parsing(finished: Path, bars_file: Path) -> None:
    (finished / "config.json").write_bytes(b" " * (17 << 20) + b"{}")
    refused(predict(finished, bars_file), "config.json", "bytes")


def resume(finished: Path, bars_file: Path) -> list[str]:
    return ["train", "--parquet-file", bars_file, *SMALL, "--epochs", "2", "--resume", finished]


def last_checkpoint(finished: Path) -> Path:
    return sorted(p for p in (finished / "checkpoints").iterdir() if p.is_dir())[-1]


@pytest.mark.parametrize("entry", ["/etc/hostname", "../x", "a/b", "..", "", "x\x00y"])
def test_manifest_entries_must_be_plain_names(finished: Path, bars_file: Path, entry: str) -> None:
    ckpt = last_checkpoint(finished)
    manifest = json.loads((ckpt / "manifest.json").read_text())
    manifest["files"][entry] = {"bytes": 10, "sha256": "0" * 64}
    (ckpt / "manifest.json").write_text(json.dumps(manifest))
    refused(resume(finished, bars_file), "manifest.json", "plain file name")


def test_manifest_sizes_are_bounded(finished: Path, bars_file: Path) -> None:
    ckpt = last_checkpoint(finished)
    manifest = json.loads((ckpt / "manifest.json").read_text())
    manifest["files"]["model.safetensors"]["bytes"] = 20 << 30 << 2  # 80 GB
    (ckpt / "manifest.json").write_text(json.dumps(manifest))
    refused(resume(finished, bars_file), "manifest.json", "refused without reading")


def test_a_file_larger_than_its_manifest_is_not_read(finished: Path, bars_file: Path) -> None:
    ckpt = last_checkpoint(finished)
    with (ckpt / "rng.safetensors").open("ab") as f:
        f.truncate(1 << 30)  # a sparse 1 GiB file: reading it would be the bug
    refused(resume(finished, bars_file), "rng.safetensors", "truncated or altered")


def test_a_symlink_out_of_the_checkpoint_is_refused(finished: Path, bars_file: Path) -> None:
    ckpt = last_checkpoint(finished)
    outside = finished.parent / "outside.bin"
    shutil.copy(ckpt / "rng.safetensors", outside)
    (ckpt / "rng.safetensors").unlink()
    os.symlink(outside, ckpt / "rng.safetensors")
    refused(resume(finished, bars_file), "rng.safetensors", "not a regular file")


def test_the_untouched_run_still_loads(finished: Path, bars_file: Path) -> None:
    before = snapshot(finished)
    assert cli(predict(finished, bars_file))[0] == 0
    assert snapshot(finished) == before


@pytest.mark.parametrize(
    ("file", "change", "says"),
    [
        ("config.json", {"model": {"hidden_size": 10**7}}, "GiB"),
        ("config.json", {"bogus": {}}, "bogus"),
        ("preprocessor.json", {"target_scaler": {"scale": 0.0}}, "target_scaler.scale"),
    ],
)
def test_an_int8_export_is_checked_like_a_run(
    finished: Path, bars_file: Path, file: str, change: dict[str, Any], says: str
) -> None:
    assert cli(["export", finished, "--dynamic"])[0] == 0
    export = finished / "int8-dynamic"
    doc = json.loads((export / file).read_text())
    for key, value in change.items():
        doc[key] = {**doc[key], **value} if isinstance(doc.get(key), dict) else value
    (export / file).write_text(json.dumps(doc))
    refused(predict(export, bars_file), file, says)


@pytest.mark.parametrize(
    ("garch", "says"),
    [
        ({"omega": 1e308, "alpha": 0.1, "beta": 0.8, "nu": 6.0}, "finite"),  # inf variance
        ({"omega": 0.1, "alpha": 0.5, "beta": 0.6, "nu": 6.0}, "does not revert"),
        ({"omega": 0.1, "alpha": 0.1, "beta": 0.8, "nu": 1.5}, "no variance"),
    ],
)
def test_baseline_state_that_makes_no_forecast_is_refused(
    finished: Path, bars_file: Path, garch: dict[str, float], says: str
) -> None:
    """Numbers in baseline.json that overflow the GARCH or profile forecast to inf are refused
    by `evaluate`, not turned into a table of inf losses."""
    path = finished / "baseline.json"
    data = json.loads(path.read_text())
    data["volatility"]["garch_t"]["0"] = garch
    path.write_text(json.dumps(data))
    args = ["evaluate", finished, "--parquet-file", bars_file]
    refused(args, "baseline.json", "garch_t", says)


@pytest.mark.parametrize(
    ("file", "section", "change", "says"),
    [  # issue 42: each was loaded in silence, the folder describing a run never trained
        ("preprocessor.json", None, {"base": "ewma"}, ["'realized_vol'", "'ewma'"]),
        ("config.json", "data", {"base": "har"}, ["data.base = 'har'", "'realized_vol'"]),
        ("config.json", "data", {"feature_groups": ["returns"]}, ["data.feature_groups"]),
        ("config.json", "data", {"volatility_windows": [6, 12]}, ["data.volatility_windows"]),
    ],
)
def test_files_that_describe_different_runs_are_refused(
    finished: Path,
    bars_file: Path,
    file: str,
    section: str | None,
    change: dict[str, object],
    says: list[str],
) -> None:
    edit_json(finished / file, change, section)
    for door in (predict(finished, bars_file), ["evaluate", finished, "--parquet-file", bars_file]):
        refused(door, "config.json", "preprocessor.json", "edited", *says)


def test_a_metrics_base_that_is_not_the_preprocessors_is_refused(
    finished: Path, bars_file: Path
) -> None:
    edit_json(finished / "metrics.json", {"base": {"name": "garch_t", "setting": "auto"}})
    refused(predict(finished, bars_file), "metrics.json", "'garch_t'", "preprocessor.json")
