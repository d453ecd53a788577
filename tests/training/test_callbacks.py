"""The callback seam: a caller's callback sees every event, and its state survives a resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from foxhunt.data import PreparedData
from foxhunt.jobs.train import JobOptions, train
from foxhunt.model.config import TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.storage.local import LocalStorage
from foxhunt.training.callbacks import callback_states, load_callback_states
from foxhunt.training.checkpoint import Checkpointer
from foxhunt.training.config import TrainingConfig
from helpers import make_trainer, tiny_job, tiny_model, tiny_run, tiny_training, with_epochs


class Recorder:
    """Counts what it saw; a tensor in its state goes through callbacks.safetensors."""

    def __init__(self) -> None:
        self.epochs: list[int] = []
        self.steps = 0
        self.loss_sum = torch.zeros(())

    def on_step_end(self, trainer: Any, loss: float) -> None:
        self.steps += 1
        self.loss_sum += loss

    def on_epoch_end(self, trainer: Any, record: dict[str, float]) -> None:
        self.epochs.append(int(record["epoch"]))

    def state_dict(self) -> dict[str, Any]:
        return {"epochs": list(self.epochs), "steps": self.steps, "sums": {"loss": self.loss_sum}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epochs, self.steps = list(state["epochs"]), state["steps"]
        self.loss_sum = state["sums"]["loss"].clone()


class Stateless:
    def on_epoch_start(self, trainer: Any) -> None: ...


def test_states_are_keyed_by_class_and_rank() -> None:
    a, b = Recorder(), Recorder()
    a.steps, b.steps = 1, 2
    states = callback_states([a, Stateless(), b])
    assert set(states) == {"Recorder", "Recorder#2"}
    c, d = Recorder(), Recorder()
    load_callback_states([Stateless(), c, d], {**states, "Gone": {}})  # unknown: ignored
    assert (c.steps, d.steps) == (1, 2)
    fresh = Recorder()
    load_callback_states([fresh], {})  # a checkpoint without it: starts fresh
    assert fresh.steps == 0


def test_a_callback_state_survives_a_mid_epoch_resume(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig, tmp_path
) -> None:
    straight = Recorder()
    make_trainer(tiny_data, tiny_model_config, tiny_training, (straight,)).fit()

    config = {"training": tiny_training.to_dict(), "model": tiny_model_config.to_dict()}
    storage = LocalStorage(tmp_path)
    first = (Recorder(), Checkpointer(storage, config=config, every_steps=4, keep_last=10))
    make_trainer(tiny_data, tiny_model_config, with_epochs(tiny_training, 1), first).fit()
    assert "callbacks.safetensors" in storage.load("step-000000004")

    resumed = Recorder()
    trainer = make_trainer(tiny_data, tiny_model_config, tiny_training, (resumed,))
    Checkpointer(storage, config=config).restore(trainer, "step-000000004")
    assert resumed.steps == 4
    trainer.fit()
    assert (resumed.epochs, resumed.steps) == (straight.epochs, straight.steps) == ([0, 1], 12)
    assert torch.equal(resumed.loss_sum, straight.loss_sum)


def job_config(epochs: int) -> RunConfig:
    training = tiny_training(epochs=epochs, max_steps_per_epoch=2)
    return tiny_run(model=tiny_model(hidden_size=8), training=training)


def test_train_hands_caller_callbacks_every_epoch_and_resumes_them(tmp_path: Path) -> None:
    straight = Recorder()
    whole = tiny_job(tmp_path / "straight", job_config(3), callbacks=(straight,))
    assert straight.epochs == [0, 1, 2] and straight.steps == 6

    run = tmp_path / "split"
    tiny_job(run, job_config(2), callbacks=(Recorder(),))
    resumed = Recorder()
    options = JobOptions(callbacks=(resumed,), resume=True)
    result = train(job_config(3), run, options=options)
    assert (resumed.epochs, resumed.steps) == (straight.epochs, straight.steps)
    assert result.metrics["test"] == whole.metrics["test"]
