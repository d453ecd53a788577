"""Checkpoints written before the trainer had a state_dict still resume, and the layout the
state dict is written in is the one they have (fixtures/make_legacy_checkpoint.py)."""

from __future__ import annotations

import ast
import json
import shutil
from dataclasses import replace
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors

from foxhunt.data import PreparedData
from foxhunt.model.config import TFTConfig
from foxhunt.storage.local import LocalStorage
from foxhunt.training import checkpoint
from foxhunt.training.checkpoint import Checkpointer
from foxhunt.training.config import TrainingConfig
from helpers import assert_identical, make_trainer, weights, with_epochs

FIXTURE = Path(__file__).parent / "fixtures" / "legacy_checkpoint"
NAME = "step-000000008"  # mid-epoch 2: best weights, AdamW moments, a position in an epoch
TENSOR_FILES = ("model.safetensors", "best.safetensors", "optimizer.safetensors")


def legacy_storage(tmp_path: Path) -> LocalStorage:
    shutil.copytree(FIXTURE, tmp_path / "checkpoints")
    return LocalStorage(tmp_path / "checkpoints")


def run_config(model: TFTConfig, training: TrainingConfig) -> dict:
    return {"training": training.to_dict(), "model": model.to_dict()}


def legacy(model: TFTConfig, training: TrainingConfig) -> tuple[TFTConfig, TrainingConfig]:
    """The fixture's run: written before the fast volatility signal, the learned spread by
    default, calibration, the initial-weights gate, sorted quantiles and the log-scale output
    (their values then: foxhunt/migrations.py)."""
    return (
        replace(model, learn_spread=False, vol_signals=0, sort_quantiles=False, log_scale=False),
        replace(training, calibrate=False, initial_confidence=0.0, range_weight=0.0),
    )


def test_a_legacy_checkpoint_restores_every_piece(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig, tmp_path
) -> None:
    tiny_model_config, tiny_training = legacy(tiny_model_config, tiny_training)
    storage = legacy_storage(tmp_path)
    saved = storage.load(NAME)
    trainer = make_trainer(tiny_data, tiny_model_config, tiny_training)
    checkpointer = Checkpointer(storage, config=run_config(tiny_model_config, tiny_training))
    assert checkpointer.restore(trainer) == NAME
    assert (trainer.state.epoch, trainer.state.batch_in_epoch, trainer.state.global_step) == (
        1,
        2,
        8,
    )
    assert trainer.sampler.state_dict() == {"epoch": 1, "start_batch": 2}
    assert_identical(weights(trainer), load_tensors(saved["model.safetensors"]))
    assert trainer.best_weights is not None
    assert_identical(trainer.best_weights, load_tensors(saved["best.safetensors"]))
    assert torch.equal(torch.get_rng_state(), load_tensors(saved["rng.safetensors"])["torch"])
    # written again at once, it is the same checkpoint: same files, same tensors, same keys
    again = checkpointer.files(trainer)
    for file in TENSOR_FILES:
        assert_identical(load_tensors(again[file]), load_tensors(saved[file]))
    assert load_tensors(again["rng.safetensors"]).keys() == {"torch"}
    old, new = json.loads(saved["state.json"]), json.loads(again["state.json"])
    assert set(new) - set(old) == {"sampler", "callbacks"}
    # the config now spells out the fields the fixture predates, at their legacy values
    assert checkpoint.config_differences(old.pop("config"), new.pop("config")) == []
    assert {k: new[k] for k in old} == old
    # and training goes on from there to the end of the run
    trainer.fit()
    assert [r["epoch"] for r in trainer.state.history] == [0, 1]
    assert all(torch.isfinite(v).all() for v in weights(trainer).values())


def test_the_legacy_layout_resumes_bit_identically(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig, tmp_path
) -> None:
    """The checkpoint a run writes, with what older ones lack taken out, resumes exactly."""
    straight = make_trainer(tiny_data, tiny_model_config, tiny_training)
    straight.fit()
    config = run_config(tiny_model_config, tiny_training)
    storage = LocalStorage(tmp_path)
    checkpointer = Checkpointer(storage, config=config, every_steps=4, keep_last=10)
    make_trainer(tiny_data, tiny_model_config, with_epochs(tiny_training, 1), (checkpointer,)).fit()
    files = storage.load("step-000000004")
    document = json.loads(files.pop("state.json"))
    del document["sampler"], document["callbacks"]
    storage.save("step-000000004", {**files, "state.json": json.dumps(document).encode()})

    resumed = make_trainer(tiny_data, tiny_model_config, tiny_training)
    torch.manual_seed(12345)  # whatever the global RNG was, the checkpoint decides
    Checkpointer(storage, config=config).restore(resumed, "step-000000004")
    resumed.fit()
    assert_identical(weights(straight), weights(resumed))
    assert resumed.state.history == straight.state.history


def test_the_checkpointer_knows_only_the_state_dict() -> None:
    """Besides `state_dict` / `load_state_dict`, it reads only when to save: the step, the
    epoch and the best epoch, as a callback may."""
    tree = ast.parse(Path(checkpoint.__file__).read_text())
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "trainer":
                used.add(node.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            inner = node.value
            if isinstance(inner.value, ast.Name) and inner.value.id == "trainer":
                used.add(f"{inner.attr}.{node.attr}")
    allowed = {"state_dict", "load_state_dict", "state"}
    allowed |= {"state.global_step", "state.epoch", "state.best_epoch"}
    assert used <= allowed, sorted(used - allowed)
