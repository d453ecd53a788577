"""The tiny data prepared, a model config fitted to it, a trainer and its weights, a job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from foxhunt.data import PreparedData, prepare_data
from foxhunt.jobs.train import JobOptions, JobResult, fit_model_config, train
from foxhunt.model import TemporalFusionTransformer, TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.training.config import TrainingConfig
from foxhunt.training.trainer import Trainer
from foxhunt.transforms import apply_model_transforms

from .configs import TINY_DATA, tiny_run


def tiny_data() -> PreparedData:
    """``TINY_DATA`` prepared (fixtures cache it per session)."""
    return prepare_data(TINY_DATA)


def fitted(config: TFTConfig, data: PreparedData) -> TFTConfig:
    """``config`` with the inputs ``data`` has, as the job fits it."""
    return fit_model_config(config, data)


def make_trainer(
    data: PreparedData,
    model_config: TFTConfig,
    training: TrainingConfig,
    callbacks: Sequence[Any] = (),
    *,
    seed: int | None = None,
    **trainer_options: Any,
) -> Trainer:
    """A trainer of a model built from ``model_config`` (and its transforms) as the job builds
    it, after seeding with ``seed`` (default ``training.seed``); ``trainer_options`` go to
    ``Trainer`` (rank, world_size, micro_batch_size)."""
    torch.manual_seed(training.seed if seed is None else seed)
    model = apply_model_transforms(TemporalFusionTransformer(model_config), model_config)
    return Trainer(
        model,
        training,
        train_set=data.train,
        val_set=data.validation,
        quantiles=model_config.quantiles,
        callbacks=callbacks,
        **trainer_options,
    )


def with_epochs(training: TrainingConfig, epochs: int) -> TrainingConfig:
    return replace(training, epochs=epochs)


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    """A copy of the trainer's model weights, to compare after more training."""
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def assert_identical(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), f"{key} differs"


def tiny_job(output_dir: Path, run: RunConfig | None = None, **options: Any) -> JobResult:
    """``train`` of ``run`` (``tiny_run()`` unless given) into ``output_dir``; ``options`` are
    ``JobOptions`` fields."""
    return train(run or tiny_run(), output_dir, options=JobOptions(**options))
