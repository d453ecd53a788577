"""The learning-rate schedule: its shape, its checks, and an exact resume of a cosine run."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from foxhunt.errors import ConfigError
from foxhunt.migrations import sections_of
from foxhunt.storage.local import LocalStorage
from foxhunt.training.checkpoint import Checkpointer
from foxhunt.training.config import TrainingConfig
from foxhunt.training.schedule import build_scheduler, planned_steps, step_scheduler
from helpers import assert_identical, make_trainer, weights


class LearningRates:
    """The learning rate of every step, as callbacks see it."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    def on_step_end(self, trainer: Any, loss: float) -> None:
        self.seen.append(trainer.last_step.lr)


class Stopped(Exception):
    pass


class StopAt:
    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer: Any, loss: float) -> None:
        if trainer.state.global_step == self.step:
            raise Stopped


def rates(config: TrainingConfig, total: int) -> list[float]:
    weight = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([weight], lr=config.lr)
    scheduler = build_scheduler(optimizer, config, total)
    out = []
    for _ in range(total + 3):  # past the plan: the last rate holds
        out.append(optimizer.param_groups[0]["lr"])
        weight.sum().backward()
        optimizer.step()
        step_scheduler(scheduler)
    return out


def test_cosine_warms_up_linearly_then_decays_to_min_lr() -> None:
    config = TrainingConfig(lr=1e-2, lr_schedule="cosine", warmup_steps=4, min_lr=1e-4)
    lr = rates(config, 20)
    assert lr[:4] == pytest.approx([2.5e-3, 5e-3, 7.5e-3, 1e-2])
    assert all(a >= b for a, b in itertools.pairwise(lr[3:]))  # never rises again
    assert lr[19] == pytest.approx(1e-4, rel=1e-3) and lr[-1] == lr[19]
    mid = 3 + (20 - 1 - 3) // 2  # halfway from the peak (the warm-up's last step)
    assert lr[mid] == pytest.approx(1e-4 + (1e-2 - 1e-4) / 2)


def test_onecycle_peaks_at_lr_after_the_warmup_and_ends_at_min_lr() -> None:
    config = TrainingConfig(lr=1e-2, lr_schedule="onecycle", warmup_fraction=0.25, min_lr=1e-5)
    lr = rates(config, 40)
    assert max(lr) == pytest.approx(1e-2) and lr.index(max(lr)) == 9
    assert lr[0] == pytest.approx(1e-2 / 25) and lr[39] == pytest.approx(1e-5)


@pytest.mark.parametrize("total", [3, 4, 7])
@pytest.mark.parametrize("warmup", [0, 1, 2, 6, 50])
def test_onecycle_takes_any_warmup_from_three_steps(total: int, warmup: int) -> None:
    config = TrainingConfig(lr=1e-2, lr_schedule="onecycle", warmup_steps=warmup)
    lr = rates(config, total)
    assert max(lr) == pytest.approx(1e-2) and lr[0] < lr[1]
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])
    with pytest.raises(ConfigError, match="onecycle' needs at least 3 planned steps"):
        build_scheduler(optimizer, config, 2)


def test_constant_has_no_scheduler_and_warmup_from_the_fraction() -> None:
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])
    assert build_scheduler(optimizer, TrainingConfig(), 100) is None
    config = TrainingConfig(epochs=3, max_steps_per_epoch=7)
    assert planned_steps(config, 10) == 21 and planned_steps(config, 5) == 15


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"lr_schedule": "linear"}, "training.lr_schedule"),
        ({"warmup_steps": -1}, "training.warmup_steps"),
        ({"warmup_fraction": 1.0}, "training.warmup_fraction"),
        ({"min_lr": 1e-3, "lr": 1e-3}, "training.min_lr"),
    ],
)
def test_bad_schedule_fields_name_themselves(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        TrainingConfig(**fields)


def test_an_old_run_reads_as_the_constant_schedule() -> None:
    saved = TrainingConfig().to_dict()
    for key in ("lr_schedule", "warmup_steps", "warmup_fraction", "min_lr"):
        del saved[key]
    old = sections_of({"training": saved})["training"]  # migrated on load
    assert TrainingConfig.from_dict(old).lr_schedule == "constant"


@pytest.mark.parametrize("schedule", ["cosine", "onecycle"])
def test_a_scheduled_run_resumes_mid_epoch_bit_for_bit(
    tiny_data, tiny_model_config, tiny_training, tmp_path: Path, schedule: str
) -> None:
    training = replace(tiny_training, lr_schedule=schedule, warmup_steps=3, lr=5e-3, min_lr=1e-4)
    straight_lr = LearningRates()
    straight = make_trainer(tiny_data, tiny_model_config, training, (straight_lr,))
    straight.fit()
    assert len(set(straight_lr.seen)) == len(straight_lr.seen) == 12  # it moved every step

    config = {"training": training.to_dict(), "model": tiny_model_config.to_dict()}
    storage = LocalStorage(tmp_path)
    # the same run stopped at step 5 (its plan: both epochs), as a kill after a checkpoint
    checkpointer = Checkpointer(storage, config=config, every_steps=4, keep_last=10)
    with pytest.raises(Stopped):
        make_trainer(tiny_data, tiny_model_config, training, (checkpointer, StopAt(5))).fit()
    assert json.loads(storage.load("step-000000004")["state.json"])["scheduler"]["last_epoch"] == 4

    resumed_lr = LearningRates()
    resumed = make_trainer(tiny_data, tiny_model_config, training, (resumed_lr,))
    torch.manual_seed(12345)
    Checkpointer(storage, config=config).restore(resumed, "step-000000004")
    resumed.fit()
    assert resumed_lr.seen == straight_lr.seen[4:]
    assert_identical(weights(straight), weights(resumed))
    assert resumed.state.history == straight.state.history


@pytest.mark.parametrize("grad_clip", [1.0, 0.0], ids=["clipped", "unclipped"])
def test_step_stats_reach_callbacks(
    tiny_data, tiny_model_config, tiny_training, grad_clip: float
) -> None:
    seen: list[tuple[float, float, float]] = []

    class Stats:
        def on_step_end(self, trainer: Any, loss: float) -> None:
            s = trainer.last_step
            seen.append((s.lr, s.grad_norm, s.seconds))

    training = replace(tiny_training, grad_clip=grad_clip)
    make_trainer(tiny_data, tiny_model_config, training, (Stats(),)).fit()
    assert len(seen) == 12
    assert all(lr == tiny_training.lr and norm > 0 and secs > 0 for lr, norm, secs in seen)
    assert all(math.isfinite(norm) for _, norm, _ in seen)
