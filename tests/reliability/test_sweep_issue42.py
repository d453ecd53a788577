"""One test per failure class the issue-42 sweep of the new doors found
(benchmarks/sweep_doors.py; docs/reliability.md, section 9)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt import build_lock
from foxhunt.backtest.folds import check_every_symbol_trains, cut_folds
from foxhunt.data.planted import PlantedConfig, generate_planted, write_planted
from foxhunt.data.planted.files import read_record, same_bars, sidecar_path
from foxhunt.errors import ConfigError, DataError
from foxhunt.storage import atomic, atomic_write_files
from foxhunt.storage.staged import open_complete, staging

from .helpers import refused

TINY = PlantedConfig(days=1)


@pytest.fixture(scope="module")
def planted_bars() -> pd.DataFrame:
    return generate_planted(TINY).frame


def test_planted_refuses_a_name_that_is_not_parquet_and_a_run_file(tmp_path: Path) -> None:
    """`planted bars.csv` wrote Parquet bytes under a CSV name; `--overwrite` replaced a
    run's own file. Both refused before anything is generated or written."""
    refused(["planted", tmp_path / "bars.csv", "--days", "1"], "bars.csv", ".parquet")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "test_forecasts.parquet").write_bytes(b"forecasts")
    target = run / "test_forecasts.parquet"
    refused(["planted", target, "--days", "1", "--overwrite"], "test_forecasts.parquet")
    assert target.read_bytes() == b"forecasts"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_planted_start_before_1971_is_refused() -> None:
    """`--start 1800-01-02` wrote bars (in local mean time) that every door refuses."""
    with pytest.raises(ConfigError, match=r"PlantedConfig.start='1800-01-02'.*1971"):
        PlantedConfig(start="1800-01-02")
    with pytest.raises(ConfigError, match=r"PlantedConfig.start='2300-01-01'"):
        PlantedConfig(start="2300-01-01")


def test_a_write_that_does_not_fit_names_the_file_and_keeps_the_old_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk while the sidecar was written left new bars beside the old record (the
    old file lost, the command failed); a file-size limit said only "File too large"."""
    bars, side = tmp_path / "b.parquet", tmp_path / "b.parquet.planted.json"
    bars.write_bytes(b"old bars")
    side.write_bytes(b"old record")
    real_fsync = os.fsync
    calls = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:  # the second file: the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    with pytest.raises(atomic.OutputPathError, match=r"b\.parquet\.planted\.json: no room"):
        atomic_write_files({bars: b"new bars", side: b"new record"})
    assert (bars.read_bytes(), side.read_bytes()) == (b"old bars", b"old record")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.parquet", "b.parquet.planted.json"]


def test_a_sidecar_whose_config_makes_other_bars_is_found(
    tmp_path: Path, planted_bars: pd.DataFrame
) -> None:
    """An edited config with the checksum kept scored the oracle of another market."""
    path = tmp_path / "p.parquet"
    write_planted(generate_planted(TINY), path)
    read = pd.read_parquet(path)
    assert same_bars(planted_bars, read)
    other = generate_planted(PlantedConfig(days=1, regime_size=5.0)).frame
    assert not same_bars(other, read)
    assert not same_bars(planted_bars.iloc[:-1], read)


@pytest.mark.parametrize(
    "text", ["{oops", "", "[]", '{"planted": {"days": -1}, "sha256": "x"}', '{"planted": {}}']
)
def test_a_damaged_planted_record_is_one_line_before_training(tmp_path: Path, text: str) -> None:
    """It was read when the test split was scored: after the whole run had trained."""
    path = tmp_path / "p.parquet"
    path.write_bytes(b"bars")
    sidecar_path(path).write_text(text)
    with pytest.raises(DataError, match=r"p\.parquet\.planted\.json: not a planted market"):
        read_record(path)


def test_train_refuses_a_damaged_planted_record_before_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "p.parquet"
    write_planted(generate_planted(TINY), path)
    sidecar_path(path).write_text('{"planted": {"wind": 1}, "sha256": "0"}')
    refused(["train", "--parquet-file", path, "--output-dir", tmp_path / "run"], "planted.json")
    assert not (tmp_path / "run").exists()


def test_an_edited_store_manifest_makes_the_entry_damaged(tmp_path: Path) -> None:
    """The manifest's metadata (rows, lookback) and file list were trusted as written: an
    edit gave a KeyError, a wrong lookback, or skipped the checksum of a file dropped from
    the list."""

    def write() -> Path:
        with staging(tmp_path, "k", hint="") as stage:
            stage.save("a.npy", np.arange(4.0))
            stage.finalize({"rows": 4, "lookback": 16})
        return tmp_path / "k" / "manifest.json"

    manifest = write()
    assert open_complete(tmp_path, "k") is not None
    for edit in ({"rows": 5}, {"lookback": 8}, {}):
        data = json.loads(manifest.read_text())
        data["metadata"] = {**data["metadata"], **edit} if edit else data["metadata"]
        data["files"] = data["files"] if edit else {}
        manifest.write_text(json.dumps(data))
        assert open_complete(tmp_path, "k") is None  # damaged: removed, prepared again
        manifest = write()


@pytest.mark.parametrize(
    ("value", "on"),
    [
        ("0", False),
        ("false", False),
        ("OFF", False),
        ("no", False),
        ("1", True),
        ("true", True),
        ("", True),
    ],
)
def test_the_kernel_switch_reads_the_usual_spellings(
    monkeypatch: pytest.MonkeyPatch, value: str, on: bool
) -> None:
    """`FOXHUNT_FUSED_KERNEL=false` left the kernels on without a word."""
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", value)
    assert build_lock.kernels_enabled() is on


@pytest.mark.parametrize(
    "variables",
    [
        {"FOXHUNT_FUSED_KERNEL": "2"},
        {"FOXHUNT_CPU_ISA": "avx512"},
        {"FOXHUNT_INT8_SIMD": "sse"},
        {"FOXHUNT_KERNEL_BUILD_TIMEOUT": "soon"},
        {"FOXHUNT_KERNEL_DEBUG": "asan"},
    ],
)
def test_a_bad_kernel_variable_is_refused_before_any_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]
) -> None:
    """A bad ISA was refused at the first forward pass, with the run under way."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    refused(["planted", tmp_path / "p.parquet", "--days", "1"], *variables)
    assert not any(tmp_path.iterdir())
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "0")  # kernels off: their settings unread
    if "FOXHUNT_FUSED_KERNEL" not in variables:
        build_lock.check_kernel_environment()


def test_a_symbol_without_bars_in_a_folds_training_span_is_refused_up_front(
    tmp_path: Path, planted_bars: pd.DataFrame
) -> None:
    """fold 0 refused such a symbol only once the backtest folder was written."""
    late = planted_bars.assign(symbol="NQ").iloc[-20:]
    frame = pd.concat([planted_bars, late], ignore_index=True)
    frame.to_parquet(tmp_path / "late.parquet")
    out = tmp_path / "bt"
    argv = ["backtest", "--parquet-file", tmp_path / "late.parquet", "--folds", "2"]
    refused([*argv, "--output-dir", out], "'NQ'", "fold 0")
    assert not out.exists()
    times = pd.DatetimeIndex(frame["timestamp"])
    folds = cut_folds(
        times,
        folds=2,
        scheme="expanding",
        test_size=None,
        embargo=pd.Timedelta(0),
        val_fraction=0.15,
    )
    with pytest.raises(DataError, match="symbol 'NQ' has no bar in fold 0's training span"):
        check_every_symbol_trains(frame, folds, "bars.parquet")
    check_every_symbol_trains(planted_bars, folds, "bars.parquet")


def test_windows_split_at_a_comma_say_how_to_write_them() -> None:
    """`--feature-groups realized:12,48` is two entries on the command line; the second was
    an "unknown feature group '48'"."""
    from foxhunt.data.features.registry import parse_groups

    with pytest.raises(ConfigError, match=r"'48' is no group: separate windows with '/'"):
        parse_groups(("realized:12", "48"))
