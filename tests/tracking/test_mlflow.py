"""--logger mlflow: a run with params, metrics and artifacts, read back through MLflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracked import train

from foxhunt.tracking import TrackingConfig, build_tracker

SKIP = "the tracking extra: pip install -e .[tracking]"
mlflow = pytest.importorskip("mlflow", reason=SKIP)
MlflowClient = pytest.importorskip("mlflow.tracking", reason=SKIP).MlflowClient


@pytest.fixture(autouse=True)
def file_store_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # the reader, in this process


def artifacts(client: Any, run_id: str, path: str) -> set[str]:
    return {a.path for a in client.list_artifacts(run_id, path)}


def test_params_metrics_and_artifacts_are_read_back(tmp_path: Path) -> None:
    run, uri = tmp_path / "run", (tmp_path / "mlruns").as_uri()
    assert train(run, "--logger", "mlflow", "--tracking-uri", uri, "--experiment", "tiny") == 0
    mlflow.set_tracking_uri(uri)
    found = mlflow.search_runs(experiment_names=["tiny"])
    assert len(found) == 1
    row = found.iloc[0]
    assert row["status"] == "FINISHED" and row["tags.mlflow.runName"] == "run"
    config = json.loads((run / "config.json").read_text())
    assert row["params.training.lr"] == str(config["training"]["lr"])
    assert row["params.model.hidden_size"] == "8"
    assert row["params.model.num_past"] == str(config["model"]["num_past"])  # fitted to data
    metrics = json.loads((run / "metrics.json").read_text())
    assert row["metrics.final/test/mean_quantile_loss"] == pytest.approx(
        metrics["test"]["mean_quantile_loss"]
    )
    for name, block in metrics["baselines"].items():
        key = f"metrics.final/baselines/{name}/mean_quantile_loss"
        assert row[key] == pytest.approx(block["mean_quantile_loss"], nan_ok=True), name
    client = MlflowClient(uri)
    history = client.get_metric_history(row["run_id"], "epoch/val_loss")
    epochs = [json.loads(r) for r in (run / "history.jsonl").read_text().splitlines()]
    val = [r["val_loss"] for r in epochs if r.get("event") == "epoch"]
    assert [m.value for m in history] == pytest.approx(val) and len(val) == 2
    assert len(client.get_metric_history(row["run_id"], "train/grad_norm")) == 6
    model = artifacts(client, row["run_id"], "model")
    assert {"model/model.safetensors", "model/config.json", "model/metrics.json"} <= model
    assert not any("checkpoints" in path for path in model)
    assert "report/report.html" in artifacts(client, row["run_id"], "report")


def test_a_resume_continues_the_same_run(tmp_path: Path) -> None:
    run, uri = tmp_path / "run", (tmp_path / "mlruns").as_uri()
    flags = ("--logger", "mlflow", "--tracking-uri", uri, "--no-report")
    assert train(run, *flags) == 0
    assert train(run, "--resume", str(run), *flags, epochs=3) == 0
    mlflow.set_tracking_uri(uri)
    found = mlflow.search_runs(experiment_names=["foxhunt"])
    assert len(found) == 1 and found.iloc[0]["status"] == "FINISHED"
    history = MlflowClient(uri).get_metric_history(found.iloc[0]["run_id"], "epoch/epoch")
    assert [(m.step, m.value) for m in history] == [(3, 1.0), (6, 2.0), (9, 3.0)]


def test_the_default_store_is_sqlite_beside_the_run_folder(tmp_path: Path) -> None:
    tracker = build_tracker(TrackingConfig(loggers=("mlflow",)), tmp_path / "runs" / "a")
    assert tracker is not None
    (sink,) = tracker.sinks
    assert sink.uri == f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"  # type: ignore[attr-defined]
    assert sink.artifact_root == tmp_path / "runs" / "mlartifacts"  # type: ignore[attr-defined]
    assert build_tracker(TrackingConfig(loggers=("none",)), tmp_path) is None


@pytest.mark.slow  # creating the SQLite store's tables takes seconds
def test_the_default_sqlite_store_holds_the_run(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "a"
    assert train(run, "--logger", "mlflow", "--no-report", epochs=1) == 0
    uri = f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    found = mlflow.search_runs(experiment_names=["foxhunt"])
    assert list(found["tags.mlflow.runName"]) == ["a"]
    assert found.iloc[0]["artifact_uri"].startswith((tmp_path / "runs" / "mlartifacts").as_uri())
    model = artifacts(MlflowClient(uri), found.iloc[0]["run_id"], "model")
    assert "model/model.safetensors" in model
    assert (tmp_path / "runs" / "mlartifacts").is_dir()
