"""Property: whatever the bars file and the flags, `foxhunt train` over an existing run exits
0 or 2 without a traceback, writes nothing outside its output folder, and leaves the existing
run byte for byte as it was unless the new run completed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from foxhunt.data import generate_bars

from .helpers import SMALL, cli, snapshot, train

BASE = generate_bars(days=6, seed=1)


def mutate(frame: pd.DataFrame, kind: str, row: int) -> pd.DataFrame:
    frame = frame.copy()
    row = row % len(frame)
    if kind == "nan":
        frame.loc[frame.index[row], "close"] = np.nan
    elif kind == "inf":
        frame.loc[frame.index[row], "high"] = np.inf
    elif kind == "negative volume":
        frame.loc[frame.index[row], "volume"] = -1.0
    elif kind == "high below low":
        frame.loc[frame.index[row], ["high", "low"]] = [1.0, 2.0]
    elif kind == "duplicate":
        frame = pd.concat([frame, frame.iloc[[row]]])
    elif kind == "shuffled":
        frame = frame.sample(frac=1.0, random_state=row)
    elif kind == "short":
        frame = frame.iloc[: row % 40]
    elif kind == "no volume":
        frame = frame.drop(columns=["volume"])
    elif kind == "text price":
        frame["close"] = frame["close"].astype(str)
        frame.loc[frame.index[row], "close"] = "n/a"
    elif kind == "constant":
        frame[["open", "high", "low", "close"]] = 100.0
    return frame


def write_bars(frame: pd.DataFrame, path: Path, form: str, cut: int) -> Path:
    if form == "csv":
        path = path.with_suffix(".csv")
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    if form == "truncated":
        path.write_bytes(path.read_bytes()[: cut % max(1, path.stat().st_size)])
    return path


def numbers(*extra: str) -> st.SearchStrategy[str]:
    """Half the draws a value of this flag (`extra`), half a hostile number."""
    hostile = st.sampled_from(["nan", "inf", "-1", "0", "1e400", "x", ""])
    return st.one_of(st.sampled_from(extra), hostile)


FLAGS: dict[str, st.SearchStrategy[str]] = {
    "--lr": numbers("1e-3", "1e30", "1e-300"),
    "--grad-clip": numbers("1", "1e-30"),
    "--weight-decay": numbers("0.1", "1e10"),
    "--dropout": numbers("0.5", "0.999", "1"),
    "--test-fraction": numbers("0.2", "0.6"),
    "--checkpoint-every": numbers("1", "2"),
    "--keep-checkpoints": numbers("1", "3"),
    "--patience": numbers("1", "0"),
    "--lookback": numbers("8", "2000", "1000000"),
    "--horizon": numbers("1", "9"),
    "--hidden-size": numbers("4", "10000000"),
    "--batch-size": numbers("1", "100000000"),
    "--quantiles": st.sampled_from(["0.5", "0.1,nan", "0.9,0.1", "0,1", "2", "0.1,0.1"]),
    "--memory-budget": st.sampled_from(["garbage", "1KB", "0MB", "-1GB", "auto", "64GB"]),
    "--max-gap": st.sampled_from(["none", "auto", "0s", "junk", "1min"]),
    "--timezone": st.sampled_from(["UTC", "Mars/Base", ""]),
    "--val-fraction": numbers("0.2", "0.99", "0.5", "0"),
}
KINDS = [
    "ok", "nan", "inf", "negative volume", "high below low", "duplicate", "shuffled", "short",
    "no volume", "text price", "constant",
]  # fmt: skip


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory, bars_file: Path) -> Path:
    run = tmp_path_factory.mktemp("pristine-prop") / "run"
    train(bars_file, run)
    return run


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.one_of(st.just("ok"), st.sampled_from(KINDS)),
    row=st.integers(0, 10_000),
    form=st.one_of(st.just("parquet"), st.sampled_from(["csv", "truncated"])),
    flags=st.dictionaries(st.sampled_from(sorted(FLAGS)), st.just(None), max_size=2),
    data=st.data(),
    overwrite=st.booleans(),
)
@example(kind="ok", row=0, form="parquet", flags={}, data=None, overwrite=True).via("success")
def test_train_never_loses_or_corrupts_a_run(
    pristine: Path,
    kind: str,
    row: int,
    form: str,
    flags: dict[str, Any],
    data: st.DataObject | None,
    overwrite: bool,
) -> None:
    root = Path(tempfile.mkdtemp(prefix="prop-"))
    try:
        work = root / "work"
        shutil.copytree(pristine, work / "run")
        frame = BASE if kind == "ok" else mutate(BASE, kind, row)
        bars = write_bars(frame, root / "bars.parquet", form, row)
        values = [f"{flag}={data.draw(FLAGS[flag], label=flag)}" for flag in flags if data]
        before = snapshot(work / "run")
        outside = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
        args = ["train", "--parquet-file", bars, *SMALL, *values, "--output-dir", work / "run"]
        code, err = cli([*args, *(["--overwrite"] if overwrite else [])])
        assert "Traceback" not in err and "internal error" not in err, err
        assert code in (0, 2), err
        if code == 2:
            assert len([x for x in err.splitlines() if x.startswith("foxhunt: error:")]) == 1
        assert sorted(p.name for p in work.iterdir()) == ["run"], "a write beside the run"
        assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == outside
        after = snapshot(work / "run")
        if code == 0:
            assert overwrite and after != before
            assert {"metrics.json", "model.safetensors", "identity.json"} <= set(after)
        else:
            assert after == before, "a refused train changed the existing run"
    finally:
        shutil.rmtree(root, ignore_errors=True)
