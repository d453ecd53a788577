import logging
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from foxhunt.storage.base import CheckpointError
from foxhunt.storage.local import LocalStorage
from foxhunt.training.checkpoint import Checkpointer
from foxhunt.training.config import TrainingConfig
from foxhunt.training.trainer import Trainer, TrainingDiverged
from helpers import assert_identical, make_trainer, weights, with_epochs


def test_same_seed_same_weights(tiny_data, tiny_model_config, tiny_training) -> None:
    a = make_trainer(tiny_data, tiny_model_config, tiny_training)
    a.fit()
    b = make_trainer(tiny_data, tiny_model_config, tiny_training)
    b.fit()
    assert_identical(weights(a), weights(b))
    assert a.state.history == b.state.history
    assert math.isfinite(a.state.best_val_loss)


def test_training_lowers_the_loss(tiny_data, tiny_model_config) -> None:
    config = TrainingConfig(epochs=3, batch_size=32, max_steps_per_epoch=20, device="cpu")
    # the direct output: the untrained model is no forecaster, so learning shows plainly
    direct = replace(
        tiny_model_config, output="direct", vol_signals=0, learn_spread=False, log_scale=False
    )
    trainer = make_trainer(tiny_data, direct, config)
    before = trainer.evaluate(tiny_data.validation)
    trainer.fit()
    assert trainer.state.best_val_loss < before


@pytest.mark.parametrize("every_steps", [None, 4], ids=["epoch-boundary", "mid-epoch"])
def test_resume_is_bit_identical(
    tiny_data, tiny_model_config, tiny_training, tmp_path: Path, every_steps: int | None
) -> None:
    straight = make_trainer(tiny_data, tiny_model_config, tiny_training)
    straight.fit()

    config_dict = {"training": tiny_training.to_dict(), "model": tiny_model_config.to_dict()}
    storage = LocalStorage(tmp_path)
    first = make_trainer(
        tiny_data,
        tiny_model_config,
        with_epochs(tiny_training, 1),
        (Checkpointer(storage, config=config_dict, every_steps=every_steps, keep_last=10),),
    )
    first.fit()
    names = storage.list()
    # mid-epoch: resume from the checkpoint inside epoch 1, so the rest of it is replayed
    name = names[-1] if every_steps is None else next(n for n in names if "epoch" not in n)

    resumed = make_trainer(tiny_data, tiny_model_config, tiny_training)
    torch.manual_seed(12345)  # whatever the global RNG was, the checkpoint decides
    Checkpointer(storage, config=config_dict).restore(resumed, name)
    resumed.fit()
    assert_identical(weights(straight), weights(resumed))
    assert resumed.state.history == straight.state.history


def test_keeps_last_k_and_best(tiny_data, tiny_model_config, tmp_path: Path) -> None:
    # every improvement counts here (no bootstrap gate, no initial weights to beat): this is
    # about which files stay
    config = TrainingConfig(
        epochs=4,
        batch_size=32,
        max_steps_per_epoch=3,
        patience=0,
        initial_confidence=0.0,
        validate_initial=False,
    )
    storage = LocalStorage(tmp_path)
    checkpointer = Checkpointer(storage, config={}, every_steps=2, keep_last=2)
    trainer = make_trainer(tiny_data, tiny_model_config, config, (checkpointer,))
    trainer.fit()
    names = storage.list()
    assert checkpointer.best_name in names
    assert len(names) <= 3
    assert names[-1].endswith("epoch-0004")


def test_config_mismatch_is_refused_naming_the_field(
    tiny_data, tiny_model_config, tiny_training, tmp_path: Path
) -> None:
    storage = LocalStorage(tmp_path)
    saved = {"training": tiny_training.to_dict(), "model": tiny_model_config.to_dict()}
    trainer = make_trainer(
        tiny_data,
        tiny_model_config,
        with_epochs(tiny_training, 1),
        (Checkpointer(storage, config=saved),),
    )
    trainer.fit()
    changed = {**saved, "training": {**saved["training"], "lr": 0.5, "epochs": 9}}
    with pytest.raises(CheckpointError, match=r"training\.lr: checkpoint has 0\.001"):
        Checkpointer(storage, config=changed).restore(trainer)


def test_nonfinite_loss_skips_then_stops(
    tiny_data, tiny_model_config, tiny_training, tmp_path: Path, caplog, monkeypatch
) -> None:
    storage = LocalStorage(tmp_path)
    checkpointer = Checkpointer(storage, config={}, every_steps=2)
    trainer = make_trainer(
        tiny_data, tiny_model_config, with_epochs(tiny_training, 3), (checkpointer,)
    )
    trainer.fit()  # writes good checkpoints
    good = storage.list()[-1]
    good_files = storage.load(good)
    real = trainer.compute_loss
    calls = {"n": 0}

    def poisoned(batch):
        calls["n"] += 1
        loss = real(batch)
        return loss * float("nan") if calls["n"] > 1 else loss

    monkeypatch.setattr(trainer, "compute_loss", poisoned)
    trainer.config = TrainingConfig(
        **{**tiny_training.to_dict(), "epochs": 6, "max_nonfinite_steps": 3}
    )
    before = weights(trainer)
    with (
        caplog.at_level(logging.WARNING, logger="foxhunt.train"),
        pytest.raises(TrainingDiverged, match="3 non-finite losses in a row"),
    ):
        trainer.fit()
    assert "step skipped" in caplog.text
    assert trainer.state.skipped_steps == 3
    after = weights(trainer)
    # one good step happened, the poisoned ones changed nothing
    assert all(torch.isfinite(v).all() for v in after.values())
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert storage.load(good) == good_files


def test_state_dict_holds_every_part_and_the_sampler_keeps_pace(
    tiny_data, tiny_model_config, tiny_training
) -> None:
    seen: list[dict] = []

    class AtStepFour:
        def on_step_end(self, trainer: Trainer, loss: float) -> None:
            if trainer.state.global_step == 4:
                seen.append(trainer.state_dict())

    trainer = make_trainer(tiny_data, tiny_model_config, tiny_training, (AtStepFour(),))
    trainer.fit()
    (state,) = seen
    assert set(state) == {
        *("model", "best_weights", "optimizer", "scaler", "train_state"),
        *("sampler", "rng", "callbacks"),
    }
    assert state["sampler"] == {"epoch": 0, "start_batch": 4}
    assert state["train_state"]["batch_in_epoch"] == 4
    assert state["callbacks"] == {}  # AtStepFour has no state
