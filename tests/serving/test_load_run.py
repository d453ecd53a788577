"""One way to load a run: ``foxhunt.serving.load_run`` gives a model ready to forecast for
every folder kind (FP32 run, QAT run, int8 export here; the ONNX export in
tests/exports/test_onnx.py, whose module-scoped export this file would trace again), and the
run folder's own loader cannot hand back a QAT run's model without its fake quantization."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.exports.int8 import export_run
from foxhunt.jobs.train import JobResult
from foxhunt.model import TemporalFusionTransformer
from foxhunt.quant import QATConfig
from foxhunt.quant.linear import FakeQuantLinear
from foxhunt.quant.schedule import schedule_of
from foxhunt.runs import QAT_FILE, load_run_folder
from foxhunt.serving import load_run
from foxhunt.trained_run import (
    load_trained_run,
    read_qat_config,
    run_qat_config,
    save_qat_config,
)
from foxhunt.training.inference import predict_windows
from helpers import tiny_job, tiny_run, tiny_training

QAT = QATConfig(freeze_after=2)


def _job(folder: Path, qat: QATConfig | None) -> JobResult:
    run = tiny_run(training=tiny_training(epochs=2))  # 6 steps: a QAT run freezes after 2
    return tiny_job(folder, run, qat=qat)


@pytest.fixture(scope="module")
def fp32(tmp_path_factory: pytest.TempPathFactory) -> JobResult:
    return _job(tmp_path_factory.mktemp("fp32") / "run", None)


@pytest.fixture(scope="module")
def qat(tmp_path_factory: pytest.TempPathFactory) -> JobResult:
    return _job(tmp_path_factory.mktemp("qat") / "run", QAT)


def _forecasts(model: nn.Module, result: JobResult) -> np.ndarray:
    assert result.data is not None
    with torch.no_grad():
        return predict_windows(model, result.data.test)[0]


def _count(model: nn.Module, kind: type[nn.Module]) -> int:
    return sum(isinstance(m, kind) for m in model.modules())


def test_an_fp32_run_loads_as_trained(fp32: JobResult) -> None:
    loaded = load_run(fp32.run_dir)
    assert fp32.model is not None and read_qat_config(fp32.run_dir) is None
    assert isinstance(loaded.model, TemporalFusionTransformer) and not loaded.model.training
    assert _count(loaded.model, FakeQuantLinear) == 0
    np.testing.assert_array_equal(_forecasts(loaded.model, fp32), _forecasts(fp32.model, fp32))


def test_a_qat_run_loads_as_the_fake_quant_model_it_trained(qat: JobResult) -> None:
    assert qat.model is not None and read_qat_config(qat.run_dir) == QAT
    loaded = load_run(qat.run_dir)
    fake_quant = _count(qat.model, FakeQuantLinear)
    assert fake_quant > 10 and _count(loaded.model, FakeQuantLinear) == fake_quant
    schedule = schedule_of(loaded.model)
    assert schedule is not None and schedule.frozen  # the trained scales, not fresh observers
    np.testing.assert_array_equal(_forecasts(loaded.model, qat), _forecasts(qat.model, qat))


def test_the_run_folder_loader_refuses_a_qat_run_without_its_transforms(qat: JobResult) -> None:
    with pytest.raises(FoxhuntError, match=f"is a QAT run \\({QAT_FILE}\\).*serving.load_run"):
        load_run_folder(qat.run_dir)
    # the one loader's run-folder branch passes them: the exporters load runs through it
    assert _count(load_trained_run(qat.run_dir).model, FakeQuantLinear) > 10


def test_the_run_folder_loader_still_loads_an_fp32_run(fp32: JobResult) -> None:
    assert fp32.model is not None
    plain = load_run_folder(fp32.run_dir).model
    np.testing.assert_array_equal(_forecasts(plain, fp32), _forecasts(fp32.model, fp32))


def test_an_int8_export_loads_as_its_int8_model(qat: JobResult, tmp_path: Path) -> None:
    assert qat.model is not None
    export_run(qat.run_dir, tmp_path / "int8", mode="qat")
    loaded = load_run(tmp_path / "int8")
    assert _count(loaded.model, FakeQuantLinear) == 0  # converted: int8 weights computed
    assert torch.int8 in {t.dtype for t in loaded.model.state_dict().values()}
    want = _forecasts(qat.model, qat)
    # foxhunt's int8 kernel: within 1.5% of the spread (tests/quant/test_export.py)
    assert np.abs(_forecasts(loaded.model, qat) - want).max() <= 0.015 * np.ptp(want)


def test_the_qat_marker_round_trips_and_a_resume_keeps_the_started_config(tmp_path: Path) -> None:
    """qat.json (trained_run.py, the job's marker): written, read back, removed for an FP32
    run; ``--resume`` continues with the saved config and refuses a different one."""
    save_qat_config(tmp_path, QAT)
    assert read_qat_config(tmp_path) == QAT
    assert run_qat_config(tmp_path, None, resume=True) == QAT
    assert run_qat_config(tmp_path, QAT, resume=True) == QAT
    other = QATConfig(freeze_after=3)
    assert run_qat_config(tmp_path, other, resume=False) == other  # a new run: as requested
    with pytest.raises(ConfigError, match="started with QAT"):
        run_qat_config(tmp_path, other, resume=True)
    save_qat_config(tmp_path, None)
    assert read_qat_config(tmp_path) is None and not (tmp_path / QAT_FILE).exists()
