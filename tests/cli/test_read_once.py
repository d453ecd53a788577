"""`foxhunt train` reads its bars once and hands its model and data on to the report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import generate_bars, io
from foxhunt.report.collect import collect, collect_from
from foxhunt.serving import load_run
from helpers import TINY_CLI


@pytest.fixture
def bars(tmp_path: Path) -> Path:
    path = tmp_path / "bars.parquet"
    generate_bars(days=8, seed=2).to_parquet(path)
    return path


def test_train_with_its_report_reads_the_bars_once(
    bars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    original = io._read_raw

    def counting(path: Path) -> pd.DataFrame:
        reads.append(path)
        return original(path)

    monkeypatch.setattr(io, "_read_raw", counting)
    run = tmp_path / "run"
    args = ["train", "--parquet-file", str(bars), *TINY_CLI, "--max-steps-per-epoch", "3"]
    assert main([*args, "--epochs", "1", "--output-dir", str(run)]) == 0
    assert (run / "report" / "report.html").is_file()
    assert reads == [bars]  # the report used the job's data, not a second read
    main(["report", str(run)])  # the report command alone reads the run's bars itself
    assert reads == [bars, bars]


def test_the_handed_on_report_is_the_reloaded_one(bars: Path, tmp_path: Path) -> None:
    from foxhunt.data import prepare_data

    run = tmp_path / "run"
    args = ["train", "--parquet-file", str(bars), *TINY_CLI, "--max-steps-per-epoch", "3"]
    assert main([*args, "--epochs", "1", "--no-report", "--output-dir", str(run)]) == 0
    loaded = load_run(run)
    data = prepare_data(loaded.config.data, preprocessor=loaded.preprocessor)
    handed = collect_from(run, loaded.model, data, loaded.config.model)
    reloaded = collect(run)
    np.testing.assert_array_equal(handed.forecasts, reloaded.forecasts)
    np.testing.assert_array_equal(handed.attention, reloaded.attention)
    assert handed.metrics == reloaded.metrics


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_predict_and_evaluate_check_the_bars_once(
    command: str, bars: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foxhunt.data import io as data_io
    from foxhunt.data import preprocess, series

    run = tmp_path / "run"
    args = ["train", "--parquet-file", str(bars), *TINY_CLI, "--max-steps-per-epoch", "2"]
    assert main([*args, "--epochs", "1", "--no-report", "--output-dir", str(run)]) == 0
    calls: dict[str, int] = {"validate": 0, "normalize": 0}

    def counted(name: str, function):  # type: ignore[no-untyped-def]
        def wrapper(*a, **k):  # type: ignore[no-untyped-def]
            calls[name] += 1
            return function(*a, **k)

        return wrapper

    for module in (data_io, preprocess, series):  # series validates for the preprocessor
        if hasattr(module, "validate_bars"):
            monkeypatch.setattr(module, "validate_bars", counted("validate", module.validate_bars))
        if hasattr(module, "normalize_timestamps"):
            monkeypatch.setattr(
                module, "normalize_timestamps", counted("normalize", module.normalize_timestamps)
            )
    assert main([command, str(run), "--parquet-file", str(bars)]) == 0
    assert calls == {"validate": 1, "normalize": 1}
