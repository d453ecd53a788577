"""The report builds on a small run, and its numbers come from that run."""

import json
from pathlib import Path

import numpy as np
import pytest

from foxhunt.cli import main
from foxhunt.data import prepare_data
from foxhunt.report import collect, write_report
from foxhunt.serving import load_run
from foxhunt.training.inference import predict_windows
from helpers import SYNTHETIC_CLI, TINY_CLI

SMALL = [
    *SYNTHETIC_CLI, *TINY_CLI, "--max-steps-per-epoch", "6", "--epochs", "2",
    "--memory-log-every", "2",
]  # fmt: skip


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("report") / "run"
    assert main(["train", *SMALL, "--output-dir", str(run)]) == 0  # writes the report too
    return run


def test_train_writes_html_and_pngs(run_dir: Path) -> None:
    html = (run_dir / "report" / "report.html").read_text()
    for name in ("loss", "forecasts", "importance", "attention", "calibration", "memory"):
        png = run_dir / "report" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f'alt="{name}"' in html
    assert "data:image/png;base64," in html
    assert "historical_quantiles" in html


def test_numbers_come_from_the_run(run_dir: Path) -> None:
    data = collect(run_dir)
    # importance: each selection network's weights sum to 1 per time step, so their means do
    assert data.past_importance.sum() == pytest.approx(1.0, abs=1e-5)
    assert data.future_importance.sum() == pytest.approx(1.0, abs=1e-5)
    assert data.static_importance.sum() == pytest.approx(1.0, abs=1e-5)
    assert len(data.past_importance) == len(data.schema.past_names)
    # attention: causal rows that sum to 1, nothing on later horizon steps
    assert np.allclose(data.attention.sum(1), 1.0, atol=1e-5)
    horizon = data.attention.shape[0]
    for h in range(horizon):
        assert np.all(data.attention[h, data.lookback + h + 1 :] == 0)
    # loss curves are history.jsonl; calibration and forecasts are metrics.json's test split
    history = [json.loads(x) for x in (run_dir / "history.jsonl").read_text().splitlines()]
    assert [e["val_loss"] for e in data.epochs] == [
        h["val_loss"] for h in history if h["event"] == "epoch"
    ]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert data.forecasts.shape[0] == metrics["test"]["num_windows"]
    for q, observed in zip(data.quantiles, data.calibration, strict=True):
        assert observed == pytest.approx(metrics["test"]["calibration"][f"{q:g}"], abs=1e-9)
    assert any(m["event"] == "memory_step" and m["step_ms"] > 0 for m in data.memory)


def test_forecasts_match_the_model(run_dir: Path) -> None:
    data = collect(run_dir)
    loaded = load_run(run_dir)
    test_split = prepare_data(loaded.config.data, preprocessor=loaded.preprocessor).test
    pred, target, _ = predict_windows(loaded.model, test_split)
    scale = loaded.preprocessor.target_scale * 1e4
    assert target is not None
    np.testing.assert_allclose(data.forecasts, pred * scale, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(data.targets, target * scale, rtol=1e-6)


def test_report_command_rebuilds(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / "report" / "loss.png").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert (run_dir / "report" / "loss.png").is_file()
    assert str(write_report(run_dir)).endswith("report.html")
