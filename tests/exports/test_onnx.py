"""`foxhunt export --onnx`: the FP32 graph under ONNX Runtime forecasts what the run does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from torch.utils.data import Subset

from foxhunt.cli import main
from foxhunt.exports.onnx_runtime import OnnxModel, load_onnx
from foxhunt.serving import load_run
from foxhunt.training.inference import predict_windows
from helpers.onnx_windows import raw_windows, run_consumer

pytest.importorskip("onnxruntime")  # the onnx extra


@pytest.fixture(scope="module")
def run_dir(fp32_onnx_run: Path) -> Path:
    return fp32_onnx_run  # tests/exports/conftest.py


@pytest.fixture(scope="module")
def export(fp32_onnx_export: Path) -> Path:
    return fp32_onnx_export


def test_folder_and_json(export: Path) -> None:
    names = {p.name for p in export.iterdir()}
    assert {"model.onnx", "onnx_export.json", "config.json", "preprocessor.json"} <= names
    spec = json.loads((export / "onnx_export.json").read_text())
    # the default run: a baseline head leaning on one volatility signal, symbols as codes
    assert [i["name"] for i in spec["inputs"]] == [
        "past", "future", "static_categorical", "scale", "vol_signal"
    ]  # fmt: skip
    assert spec["output"]["shape"] == ["batch", 4, 3]
    assert spec["lookback"] == 16 and spec["horizon"] == 4
    assert len(spec["scaler"]["mean"]) == len(spec["features"]["past"])
    assert spec["features"]["future"] == spec["features"]["past"][-7:]  # 4 clock + 3 session
    assert spec["calendar"] == "CME Globex Equity"  # inferred from the ES bars
    assert spec["volatility"]["profile"]["bucket_minutes"] > 0


@pytest.mark.parametrize("batch_size", [1, 64])
def test_onnx_matches_pytorch(
    run_dir: Path, export: Path, bars_file: Path, batch_size: int
) -> None:
    run = load_run(run_dir)
    dataset = run.preprocessor.dataset(pd.read_parquet(bars_file))
    if batch_size == 1:  # every 8th window: batches of one cost a call each, in both models
        dataset = Subset(dataset, range(0, len(dataset), 8))
    want, _, _ = predict_windows(run.model, dataset, batch_size=batch_size)
    onnx = load_run(export).model  # the one loader: ONNX Runtime computes an ONNX folder
    assert isinstance(onnx, OnnxModel)
    got, _, _ = predict_windows(onnx, dataset, batch_size=batch_size)
    assert np.abs(got - want).max() <= 1e-4 * np.ptp(want)
    model = load_onnx(export)  # the Python API
    batch = dataset.__getitems__(list(range(batch_size)))
    one = model.predict(batch).quantiles.numpy()
    np.testing.assert_allclose(one, want[:batch_size], atol=1e-4 * np.ptp(want))


def test_onnxruntime_numpy_and_the_json_alone_reproduce_the_forecasts(
    run_dir: Path, export: Path, bars_file: Path, tmp_path: Path
) -> None:
    """A process importing only onnxruntime and numpy, given the folder and raw windows."""
    run = load_run(run_dir)
    frame = pd.read_parquet(bars_file)
    batch, raw = raw_windows(run.preprocessor, frame, step=37)
    want = run.model.eval()(batch).quantiles.detach().numpy()
    got = run_consumer(export, raw, tmp_path)
    assert np.abs(got - want).max() <= 1e-4 * np.ptp(want)


def test_predict_and_evaluate_on_the_onnx_folder(
    run_dir: Path, export: Path, bars_file: Path, tmp_path: Path
) -> None:
    results = {}
    for name, folder in (("run", run_dir), ("onnx", export)):
        csv, js = tmp_path / f"{name}.csv", tmp_path / f"{name}.json"
        data = ["--parquet-file", str(bars_file)]
        assert main(["predict", str(folder), *data, "--output", str(csv)]) == 0
        assert main(["evaluate", str(folder), *data, "--json", str(js)]) == 0
        results[name] = (pd.read_csv(csv), json.loads(js.read_text()))
    (fc_run, m_run), (fc_onnx, m_onnx) = results["run"], results["onnx"]
    cols = [c for c in fc_run.columns if c.endswith("_bp")]
    np.testing.assert_allclose(fc_onnx[cols], fc_run[cols], atol=2e-3)
    loss = "mean_quantile_loss"
    assert m_onnx["test"][loss] == pytest.approx(m_run["test"][loss], rel=1e-5)


def _damage(folder: Path, how: str) -> None:
    if how == "missing model":
        (folder / "model.onnx").unlink()
    elif how == "damaged json":
        (folder / "onnx_export.json").write_text("{not json")
    elif how == "damaged model":
        (folder / "model.onnx").write_bytes(b"garbage")
    elif how == "wrong lookback":
        spec = json.loads((folder / "onnx_export.json").read_text())
        spec["lookback"] = 99
        (folder / "onnx_export.json").write_text(json.dumps(spec))
    elif how == "mismatched config":
        config = json.loads((folder / "config.json").read_text())
        config["model"]["lookback"] = 20
        config["data"]["lookback"] = 20
        (folder / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize(
    "how",
    ["missing model", "damaged json", "damaged model", "wrong lookback", "mismatched config"],
)
def test_a_bad_export_folder_exits_2_with_one_line(
    export: Path, bars_file: Path, tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    for p in export.iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    _damage(folder, how)
    capsys.readouterr()
    assert main(["predict", str(folder), "--parquet-file", str(bars_file)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err


def test_a_qat_run_is_refused_with_a_pointer_to_int8(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qat = tmp_path / "qat"
    qat.mkdir()
    for p in run_dir.iterdir():
        if p.is_file():
            (qat / p.name).write_bytes(p.read_bytes())
    (qat / "qat.json").write_text("{}")
    capsys.readouterr()
    assert main(["export", "--onnx", str(qat), "--output", str(tmp_path / "o")]) == 2
    assert "--int8" in capsys.readouterr().err
