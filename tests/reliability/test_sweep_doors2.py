"""One test per failure class the second sweep of issue 42's doors found: `foxhunt diagnose`,
`train --diagnostics`, the range loss and the kernels' build folder
(benchmarks/_sweep_cases2.py; docs/reliability.md, section 9)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from torch.utils import cpp_extension

from foxhunt import build_lock, cpp_kernels
from foxhunt.cli.resolve import parsed
from foxhunt.cli.train import command as train_command
from foxhunt.data import feature_store
from foxhunt.errors import ConfigError, UsageError
from foxhunt.jobs.diagnose import Diagnosis, summary
from foxhunt.model import grn_cells
from foxhunt.storage.atomic import atomic_write_json
from foxhunt.storage.staged import open_complete, staging
from foxhunt.training.config import TrainingConfig
from foxhunt.training.diagnose_config import DiagnoseConfig
from foxhunt.training.lr_range import LRRange
from foxhunt.training.overfit import OverfitResult


@pytest.mark.parametrize("value", ["inf", "Infinity", "-inf", "nan"])
def test_a_build_timeout_that_never_ends_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """`FOXHUNT_KERNEL_BUILD_TIMEOUT=inf` was accepted: a wait that is never given up."""
    monkeypatch.setenv(build_lock.TIMEOUT_ENV, value)
    with pytest.raises(ConfigError, match=f"{build_lock.TIMEOUT_ENV}=.*finite"):
        build_lock.timeout()
    monkeypatch.setenv(build_lock.TIMEOUT_ENV, "1e6")
    assert build_lock.timeout() == 1e6


def test_a_store_entry_without_a_required_file_is_damaged(tmp_path: Path) -> None:
    """An entry whose manifest lists no ranges.npy (checksums redone, or an older writer's)
    was read as it stood: the run trained without the range loss, unsaid."""
    with staging(tmp_path, "k", hint="") as stage:
        stage.save("inputs.npy", np.arange(4.0))
        stage.finalize({"rows": 4})
    assert open_complete(tmp_path, "k", ("inputs.npy",)) is not None
    assert open_complete(tmp_path, "k", ("inputs.npy", "ranges.npy")) is None
    assert not (tmp_path / "k").exists()  # removed: prepared again
    assert "ranges.npy" in feature_store.REQUIRED


def test_a_damaged_cached_kernel_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A truncated module in the build folder (newer than its sources: ninja keeps it) failed
    to import on every run, falling back to ATen with advice to install a compiler."""
    folder = tmp_path / "foxhunt_grn_cells_abc"
    folder.mkdir()
    library = folder / f"{folder.name}.so"
    library.write_bytes(b"\x7fELF truncated")
    module = types.ModuleType(folder.name)
    calls = []

    def load(**kwargs: object) -> types.ModuleType:
        calls.append(library.exists())
        versions = cpp_extension.JIT_EXTENSION_VERSIONER.entries
        if folder.name in versions:  # torch would skip the build and import the same file
            raise ImportError(f"{library}: cannot open shared object file")
        versions[folder.name] = "built"
        if library.exists():
            raise ImportError(f"{library}: file too short")
        return module

    monkeypatch.setattr(cpp_extension, "load", load)
    monkeypatch.setattr(cpp_extension.JIT_EXTENSION_VERSIONER, "entries", {})
    assert cpp_kernels._compile(grn_cells.SOURCE, folder, "avx2", False) is module
    assert calls == [True, False]  # removed, then built

    def broken(**kwargs: object) -> types.ModuleType:
        raise ImportError("undefined symbol")  # no module file: not ours to remove

    monkeypatch.setattr(cpp_extension, "load", broken)
    with pytest.raises(ImportError):
        cpp_kernels._compile(grn_cells.SOURCE, folder, "avx2", False)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: DiagnoseConfig(lr_range_end=1e300), "lr_range_end"),
        (lambda: DiagnoseConfig(overfit_lr=1e39), "overfit_lr"),
        (lambda: TrainingConfig(lr=1e300), "lr"),
    ],
)
def test_a_learning_rate_beyond_what_adamw_can_apply_is_refused(make: Any, field: str) -> None:
    """`diagnose --lr-range-end 1e300` ended in `internal error: RuntimeError: value cannot be
    converted to type float without overflow` once the range test reached float32's limit."""
    with pytest.raises(ConfigError, match=rf"\b{field}\b.*1e\+06"):
        make()
    DiagnoseConfig(lr_range_end=1e6, overfit_lr=1e6)  # the ceiling itself trains (diverges)


def test_diagnose_on_bars_with_nothing_to_fit_says_so() -> None:
    """On flat bars (every target 0) the loss is 0 from the start: the range test's drop was
    `internal error: ZeroDivisionError`, and the overfit check said FAIL."""
    zero = LRRange(
        lrs=[1e-6, 1e-4],
        losses=[0.0, 0.0],
        smoothed=[0.0, 0.0],
        batch_losses=[0.0, 0.0],
        stopped="end",
        lr_at_min=1e-6,
        lr_steepest=1e-6,
    )
    assert zero.drop == 0.0 and math.isnan(zero.suggested)
    fit = OverfitResult(windows=16, steps=3, lr=1e-3, head_loss=0.0, final_loss=0.0, threshold=0.5)
    assert fit.to_dict()["verdict"] == "NOTHING TO FIT"
    table = summary(Diagnosis(overfit=fit, lr_range=zero, training_lr=1e-3))
    assert "NOTHING TO FIT" in table and "flat" in table
    assert json.dumps(Diagnosis(fit, zero, 1e-3).to_dict(), allow_nan=False)


@pytest.mark.parametrize("given", ["--diagnostics=0", "--overwrite=maybe", "--no-qat=true"])
def test_a_switch_given_a_value_it_does_not_read_is_refused(given: str) -> None:
    """`--overwrite=0` (any value but true/false/yes/no) read as the bare switch: on."""
    flag = given.split("=")[0].replace("--no-", "--")
    with pytest.raises(UsageError, match=f"{flag} .* is a switch"):
        parsed(train_command(), ["--parquet-file", "b.parquet", given])


def test_a_switch_followed_by_a_stray_word_names_the_switch() -> None:
    """`--diagnostics maybe` was "unrecognized arguments: maybe"."""
    with pytest.raises(UsageError, match=r"--diagnostics .* is a switch.*'maybe'"):
        parsed(train_command(), ["--parquet-file", "b.parquet", "--diagnostics", "maybe"])
    cfg = parsed(train_command(), ["--parquet-file", "b.parquet", "--diagnostics", "--qat", "no"])
    assert cfg.options.diagnostics is True and cfg.options.qat is False


def test_a_temporary_left_by_a_killed_writer_goes_with_the_next_write(tmp_path: Path) -> None:
    """`diagnose` killed -9 while writing diagnose.json left `.diagnose.json.xxxx.tmp`, and
    every rerun kept it."""
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()  # a pid that is gone
    target = tmp_path / "diagnose.json"
    orphan = tmp_path / f".diagnose.json.{dead.pid}-abc123.tmp"
    live = tmp_path / f".diagnose.json.{os.getpid()}-def456.tmp"  # a writer still at work
    other = tmp_path / f".other.json.{dead.pid}-abc123.tmp"
    for path in (orphan, live, other):
        path.write_text("{")
    atomic_write_json(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    assert not orphan.exists() and live.exists() and other.exists()
