"""`--base`: a run on a fitted base saves it, and predict/evaluate rebuild the same scale; a
run saved before `base` loads as the rolling one; a bad --base exits 2 naming the choices."""

import contextlib
import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import DataConfig, Preprocessor
from foxhunt.errors import ConfigError
from foxhunt.runs import read_run_config
from foxhunt.runs.checks import read_preprocessor
from foxhunt.serving import load_run
from helpers import TINY_CLI

# no HTML report: its charts cost seconds a run, and nothing here reads it
SMALL = [*TINY_CLI, "--max-steps-per-epoch", "5", "--seed", "3", "--epochs", "1", "--no-report"]
CHOICES = "auto, realized_vol, ewma, har, garch_t"
LEGACY_RUN = Path(__file__).parents[1] / "quant" / "legacy_qat_run"


def train_run(folder: Path, bars: Path, *flags: str) -> Path:
    args = ["train", "--parquet-file", str(bars), *SMALL, *flags, "--output-dir", str(folder)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(args) == 0
    return folder


@pytest.fixture(scope="module")
def ewma_run(tmp_path_factory: pytest.TempPathFactory, bars_file: Path) -> Path:
    return train_run(tmp_path_factory.mktemp("ewma") / "r", bars_file, "--base", "ewma")


@pytest.fixture(scope="module")
def rolling_run(tmp_path_factory: pytest.TempPathFactory, bars_file: Path) -> Path:
    return train_run(tmp_path_factory.mktemp("rolling") / "r", bars_file)


def quiet(args: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return main(args)


def test_the_run_records_its_base(ewma_run: Path) -> None:
    saved = json.loads((ewma_run / "preprocessor.json").read_text())
    assert saved["base"] == "ewma" and saved["version"] == Preprocessor.VERSION
    assert json.loads((ewma_run / "config.json").read_text())["data"]["base"] == "ewma"
    assert json.loads((ewma_run / "metrics.json").read_text())["base"]["name"] == "ewma"


def test_evaluate_rebuilds_the_runs_test_forecasts(
    ewma_run: Path, bars_file: Path, tmp_path: Path
) -> None:
    forecasts = tmp_path / "fc.parquet"
    args = ["evaluate", str(ewma_run), "--parquet-file", str(bars_file)]
    assert quiet([*args, "--forecasts", str(forecasts)]) == 0
    trained = pd.read_parquet(ewma_run / "test_forecasts.parquet")
    merged = trained.merge(
        pd.read_parquet(forecasts), on=["symbol", "origin", "step"], suffixes=("", "_again")
    )
    assert len(merged) == len(trained) > 0
    for column in ("q0.1", "q0.5", "q0.9", "ewma:q0.9"):
        np.testing.assert_allclose(merged[column], merged[f"{column}_again"], rtol=1e-5, atol=1e-7)
    # and the base matters: the rolling volatility would scale these windows otherwise
    loaded = load_run(ewma_run)
    frame = pd.read_parquet(bars_file)
    frame.attrs["source"] = str(bars_file)
    ewma = loaded.preprocessor.dataset(frame).base_volatility
    rolling = replace(loaded.preprocessor, base="realized_vol", base_filter=None).dataset(frame)
    assert ewma is not None and rolling.base_volatility is not None
    assert not np.allclose(ewma.numpy(), rolling.base_volatility.numpy(), rtol=1e-3)


def test_predict_rebuilds_a_test_forecast(ewma_run: Path, bars_file: Path, tmp_path: Path) -> None:
    trained = pd.read_parquet(ewma_run / "test_forecasts.parquet")
    origin = trained["origin"].iloc[len(trained) // 2]
    frame = pd.read_parquet(bars_file)
    upto = tmp_path / "upto.parquet"
    frame[frame["timestamp"] <= origin].to_parquet(upto)
    out = tmp_path / "fc.csv"
    assert quiet(["predict", str(ewma_run), "--parquet-file", str(upto), "--output", str(out)]) == 0
    table = pd.read_csv(out)
    expected = trained[trained["origin"] == origin].sort_values("step")
    assert len(table) == len(expected) == 4
    for level in ("0.1", "0.5", "0.9"):
        np.testing.assert_allclose(table[f"q{level}_bp"], expected[f"q{level}"], atol=2e-3)


def test_a_base_without_its_baseline_json_is_refused(
    ewma_run: Path, bars_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ewma_run, copy)
    (copy / "baseline.json").unlink()
    capsys.readouterr()
    assert main(["predict", str(copy), "--parquet-file", str(bars_file)]) == 2
    err = capsys.readouterr().err
    assert "baseline.json not found" in err and "'ewma'" in err and "Traceback" not in err


def test_a_rolling_run_records_its_base_and_loads(
    rolling_run: Path, bars_file: Path, tmp_path: Path
) -> None:
    saved = json.loads((rolling_run / "preprocessor.json").read_text())
    assert saved["base"] == "realized_vol" and saved["version"] == Preprocessor.VERSION
    assert "base" not in json.loads((rolling_run / "metrics.json").read_text())
    copy = tmp_path / "copy"
    shutil.copytree(rolling_run, copy)
    (copy / "baseline.json").unlink()  # the rolling base reads none
    assert quiet(["predict", str(copy), "--parquet-file", str(bars_file)]) == 0


def test_a_run_saved_before_base_loads_as_the_rolling_one() -> None:
    config = json.loads((LEGACY_RUN / "config.json").read_text())
    assert "base" not in config["data"]
    assert read_run_config(LEGACY_RUN).data.base == "realized_vol"
    pre = read_preprocessor(LEGACY_RUN / "preprocessor.json")
    assert pre.base == "realized_vol" and pre.base_filter is None


@pytest.mark.parametrize("command", ["train", "backtest"])
def test_a_bad_base_exits_2_naming_the_choices(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([command, "--base", "garch", "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("foxhunt: error:")]
    assert len(lines) == 1 and "--base" in lines[0] and CHOICES in lines[0], err


def test_a_bad_base_in_a_config_file_names_the_choices() -> None:
    with pytest.raises(ConfigError, match=f"DataConfig.base='GARCH'.*{CHOICES}"):
        DataConfig(base="GARCH")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", [["--dynamic"], ["--onnx"]])
def test_an_export_scales_with_the_runs_base(
    ewma_run: Path, bars_file: Path, tmp_path: Path, kind: list[str]
) -> None:
    if kind == ["--onnx"]:
        pytest.importorskip("onnxruntime")
    folder = tmp_path / "export"
    assert quiet(["export", str(ewma_run), *kind, "--output", str(folder)]) == 0
    exported, run = load_run(folder), load_run(ewma_run)
    assert exported.preprocessor.base == "ewma" and exported.preprocessor.base_filter is not None
    frame = pd.read_parquet(bars_file)
    frame.attrs["source"] = str(bars_file)
    ours = exported.preprocessor.dataset(frame).base_volatility
    theirs = run.preprocessor.dataset(frame).base_volatility
    assert ours is not None and theirs is not None
    assert np.array_equal(ours.numpy(), theirs.numpy(), equal_nan=True)
    assert quiet(["predict", str(folder), "--parquet-file", str(bars_file)]) == 0
    if kind == ["--onnx"]:  # a program in another language is told which base, and how
        formulas = json.loads((folder / "onnx_export.json").read_text())["volatility"]["formulas"]
        assert formulas["base"].startswith("ewma: ") and "volatility.ewma" in formulas["base"]
