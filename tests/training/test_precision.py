"""--precision: decided before training, refused with one line where the device cannot."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from foxhunt.cli import main
from foxhunt.data import PreparedData
from foxhunt.errors import ConfigError
from foxhunt.model.config import TFTConfig
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.training import precision
from foxhunt.training.config import TrainingConfig
from foxhunt.training.trainer import Trainer

CPU = torch.device("cpu")


def test_fp32_is_no_autocast_and_fp16_is_cuda_only() -> None:
    assert precision.autocast_dtype("fp32", CPU) is None
    with pytest.raises(ConfigError, match="--precision fp16: autocast to fp16 runs on CUDA only"):
        precision.autocast_dtype("fp16", CPU)


def test_bf16_on_a_cpu_that_cannot_is_refused_naming_why(monkeypatch: pytest.MonkeyPatch) -> None:
    problem = "could not create a primitive descriptor for the LSTM forward propagation primitive"
    monkeypatch.setattr(precision, "cpu_bf16_problem", lambda: problem)
    with pytest.raises(ConfigError, match=r"--precision bf16: this CPU cannot.*AVX-512 BF16"):
        precision.autocast_dtype("bf16", CPU)


def test_cli_refuses_bf16_before_writing_anything(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(precision, "cpu_bf16_problem", lambda: "no bf16 LSTM here")
    run = tmp_path / "r"
    args = [
        "train",
        "--synthetic-market",
        "garch",
        "--synthetic-days",
        "4",
        "--precision",
        "bf16",
        "--device",
        "cpu",
    ]
    assert main([*args, "--output-dir", str(run)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(errors) == 1 and "no bf16 LSTM here" in errors[0] and "Traceback" not in errors[0]
    assert not run.exists()


@pytest.mark.skipif(
    precision.cpu_bf16_problem() is not None,
    reason=f"this CPU cannot run bf16 ({precision.cpu_bf16_problem()}): refused, as tested above",
)
def test_bf16_on_a_capable_cpu_trains_under_bf16_autocast(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig
) -> None:
    config = TrainingConfig(**{**tiny_training.to_dict(), "precision": "bf16", "epochs": 1})
    trainer = Trainer(
        TemporalFusionTransformer(tiny_model_config),
        config,
        train_set=tiny_data.train,
        val_set=tiny_data.validation,
        quantiles=tiny_model_config.quantiles,
    )
    with trainer.autocast():
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
    state = trainer.fit()
    assert state.global_step > 0 and torch.isfinite(torch.tensor(state.best_val_loss))


def test_the_probe_leaves_the_callers_random_stream_alone() -> None:
    precision.cpu_bf16_problem.cache_clear()
    torch.manual_seed(5)
    precision.cpu_bf16_problem()
    after = torch.rand(3)
    torch.manual_seed(5)
    assert torch.equal(torch.rand(3), after)
