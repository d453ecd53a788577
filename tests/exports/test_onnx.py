"""`foxhunt export --onnx`: the FP32 graph under ONNX Runtime forecasts what the run does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from foxhunt.cli import main
from foxhunt.data import generate_bars
from foxhunt.data.volatility import minute_of_day
from foxhunt.exports.onnx_runtime import load_onnx
from foxhunt.runs import load_run_folder
from foxhunt.serving import load_run
from foxhunt.training.inference import predict_windows
from helpers import TINY_CLI

ort = pytest.importorskip("onnxruntime")  # the onnx extra

SMALL = [*TINY_CLI, "--max-steps-per-epoch", "4", "--seed", "3", "--no-report", "--epochs", "1"]


@pytest.fixture(scope="module")
def bars_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bars") / "bars.parquet"
    generate_bars(days=8, seed=1).to_parquet(path)
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, bars_file: Path) -> Path:
    folder = tmp_path_factory.mktemp("fp32") / "r"
    args = ["train", "--parquet-file", str(bars_file), *SMALL, "--output-dir", str(folder)]
    assert main(args) == 0
    return folder


@pytest.fixture(scope="module")
def export(run_dir: Path) -> Path:
    folder = run_dir.parent / "onnx"
    assert main(["export", "--onnx", str(run_dir), "--output", str(folder)]) == 0
    return folder


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
    run = load_run_folder(run_dir)
    dataset = run.preprocessor.dataset(pd.read_parquet(bars_file))
    want, _, _ = predict_windows(run.model, dataset, batch_size=batch_size)
    got, _, _ = predict_windows(load_run(export).model, dataset, batch_size=batch_size)
    assert np.abs(got - want).max() <= 1e-4 * np.ptp(want)
    model = load_onnx(export)  # the Python API
    batch = dataset.__getitems__(list(range(batch_size)))
    one = model.predict(batch).quantiles.numpy()
    np.testing.assert_allclose(one, want[:batch_size], atol=1e-4 * np.ptp(want))


def _onnx_only_forecast(folder: Path, raw: dict[str, Any]) -> np.ndarray:
    """What a consumer without foxhunt does: onnxruntime, numpy and onnx_export.json."""
    spec = json.loads((folder / "onnx_export.json").read_text())
    mean = np.asarray(spec["scaler"]["mean"])
    std = np.asarray(spec["scaler"]["std"])
    f = len(spec["features"]["future"])
    vol = spec["volatility"]
    profile = np.asarray(vol["profile"]["values"])
    base = raw["base_rms"] / spec["target_scale"]  # [B]
    fast = raw["fast_rms"] / spec["target_scale"]
    feeds = {
        "past": ((raw["past"] - mean) / std).astype(np.float32),
        "future": ((raw["future"] - mean[-f:]) / std[-f:]).astype(np.float32),
        "static_categorical": np.array(
            [[spec["symbols"].index(s)] for s in raw["symbols"]], dtype=np.int64
        ),
        "scale": (
            base[:, None] * profile[raw["future_minutes"] // vol["profile"]["bucket_minutes"]]
        ).astype(np.float32),
        "vol_signal": np.clip(np.log(fast / base), -vol["signal_limit"], vol["signal_limit"])[
            :, None
        ].astype(np.float32),
    }
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    (out,) = session.run(["quantiles"], feeds)
    return np.asarray(out)


def test_onnxruntime_numpy_and_the_json_alone_reproduce_the_forecasts(
    run_dir: Path, export: Path, bars_file: Path
) -> None:
    run = load_run_folder(run_dir)
    pre = run.preprocessor
    frame = pd.read_parquet(bars_file)
    dataset = pre.dataset(frame)
    batch = dataset.__getitems__(list(range(0, len(dataset), 37)))
    want = run.model.eval()(batch).quantiles.detach().numpy()
    # the raw (unscaled) window arrays a desk would have; foxhunt only prepares them here
    encoded = pre.encode(frame, min_rows=pre.lookback)
    baseline = pre.baseline(encoded)
    assert baseline is not None and baseline.signal is not None
    anchor = batch.anchor.numpy()
    inputs = encoded.features.inputs
    h, lb, f = pre.horizon, pre.lookback, batch.future.shape[-1]
    future_rows = anchor[:, None] + np.arange(1, h + 1)
    ratio = np.exp(baseline.signal[anchor])
    raw = {
        "past": inputs[anchor[:, None] + np.arange(-lb + 1, 1)],
        "future": inputs[future_rows][..., -f:],
        "symbols": [pre.symbols.categories[c] for c in encoded.symbol_codes[anchor]],
        "future_minutes": minute_of_day(encoded.times[future_rows.ravel()], pre.timezone).reshape(
            -1, h
        ),
        "base_rms": baseline.volatility[anchor] * pre.target_scale,
        "fast_rms": baseline.volatility[anchor] * ratio * pre.target_scale,
    }
    got = _onnx_only_forecast(export, raw)
    np.testing.assert_allclose(got, want, atol=1e-4 * np.ptp(want))


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
