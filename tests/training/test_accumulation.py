"""Micro-batches with gradient accumulation: the same gradients, and so the same training."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
from torch import Tensor

from foxhunt.bench.memory import random_batch
from foxhunt.data import PreparedData
from foxhunt.model.config import TFTConfig
from foxhunt.training.config import TrainingConfig
from foxhunt.training.trainer import Trainer
from helpers import make_trainer as build_trainer


def make_trainer(
    cfg: TFTConfig, data: PreparedData, micro: int | None, **training: float
) -> Trainer:
    config = TrainingConfig(batch_size=12, device="cpu", **training)  # type: ignore[arg-type]
    return build_trainer(data, replace(cfg, dropout=0.0), config, seed=0, micro_batch_size=micro)


def step_gradients(trainer: Trainer, batch: object) -> dict[str, Tensor]:
    grads: dict[str, Tensor] = {}

    def record(*args: object, **kwargs: object) -> None:
        for name, p in trainer.model.named_parameters():
            if p.grad is not None:
                grads[name] = p.grad.detach().clone()

    trainer.update.optimizer.step = record  # type: ignore[method-assign]
    trainer.train_step(batch)  # type: ignore[arg-type]
    return grads


@pytest.mark.parametrize("micro", [1, 5, 6])
def test_accumulated_gradients_equal_full_batch(
    tiny_model_config: TFTConfig, tiny_data: PreparedData, micro: int
) -> None:
    batch = random_batch(tiny_model_config, 12, seed=3)
    full = step_gradients(make_trainer(tiny_model_config, tiny_data, None, grad_clip=0.0), batch)
    accumulated = step_gradients(
        make_trainer(tiny_model_config, tiny_data, micro, grad_clip=0.0), batch
    )
    assert full.keys() == accumulated.keys() and full
    for name, grad in full.items():
        torch.testing.assert_close(accumulated[name], grad, atol=1e-6, rtol=1e-5, msg=name)


def test_micro_batched_training_reaches_the_same_weights(
    tiny_model_config: TFTConfig, tiny_data: PreparedData
) -> None:
    plain = make_trainer(tiny_model_config, tiny_data, None, grad_clip=1.0)
    micro = make_trainer(tiny_model_config, tiny_data, 4, grad_clip=1.0)
    for step in range(4):
        batch = random_batch(tiny_model_config, 12, seed=10 + step)
        loss_plain, loss_micro = plain.train_step(batch), micro.train_step(batch)
        assert loss_micro == pytest.approx(loss_plain, rel=1e-5)
    assert micro.state.global_step == plain.state.global_step == 4
    for (name, a), b in zip(
        plain.model.state_dict().items(), micro.model.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-4, msg=name)


def test_nonfinite_micro_batch_skips_the_whole_step(
    tiny_model_config: TFTConfig, tiny_data: PreparedData
) -> None:
    trainer = make_trainer(tiny_model_config, tiny_data, 4)
    before = copy.deepcopy(trainer.model.state_dict())
    batch = random_batch(tiny_model_config, 12, seed=1)
    assert batch.target is not None
    batch.target[9, 0] = float("nan")  # only the last micro-batch is poisoned
    loss = trainer.train_step(batch)
    assert loss != loss  # NaN
    assert trainer.state.skipped_steps == 1 and trainer.state.global_step == 0
    for name, value in trainer.model.state_dict().items():
        torch.testing.assert_close(value, before[name], msg=name)
    assert all(p.grad is None for p in trainer.model.parameters())
