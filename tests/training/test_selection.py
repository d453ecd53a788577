"""A trained epoch must earn its way past the initial weights (training/selection.py)."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from foxhunt.data import PreparedData
from foxhunt.model.config import TFTConfig
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.task import window_losses
from foxhunt.task.bootstrap import block_means, interval, share_below_zero
from foxhunt.training.config import TrainingConfig
from foxhunt.training.selection import InitialGate, window_blocks
from foxhunt.training.trainer import Trainer


def test_block_bootstrap_resamples_whole_days() -> None:
    rng = np.random.default_rng(0)
    blocks = np.repeat(np.arange(40), 50)
    day_effect = np.repeat(rng.normal(0, 1, 40), 50)  # errors of a day move together
    diff = day_effect + rng.normal(0, 0.1, len(blocks))
    low, high = interval(diff, blocks)
    # the day-level spread sets the width: ~ 2 * 1.96 / sqrt(40) ~ 0.6, not the window-level 0.06
    assert 0.4 < high - low < 0.9
    assert share_below_zero(diff - 5.0, blocks) == 1.0
    assert share_below_zero(diff + 5.0, blocks) == 0.0
    # each resample draws as many days as there are: its mean is a mean over whole days
    means = block_means(np.arange(4.0), np.array([0, 0, 1, 1]), 1000)
    assert set(np.round(means, 6)) <= {0.5, 1.5, 2.5}


def _predictor(pred: np.ndarray, target: np.ndarray):  # type: ignore[no-untyped-def]
    return lambda dataset: (pred, target)


@pytest.mark.parametrize(("change", "accepted"), [("reshuffled", False), ("step", True)])
def test_gate_needs_a_sure_improvement(change: str, accepted: bool) -> None:
    rng = np.random.default_rng(1)
    target = rng.normal(0, 1, (400, 2))
    noise = rng.normal(0, 0.3, (400, 2, 1))
    initial = np.stack([target * 0 - 1.0, target * 0, target * 0 + 1.0], -1) + noise
    if change == "step":  # every forecast moves a third of the way toward the outcome
        better = initial + (target[..., None] - initial) / 3
    else:  # as good on average, noise drawn anew: any "win" on validation is luck
        better = initial - noise + rng.normal(0, 0.3, noise.shape)
    gate = InitialGate(0.95, (0.1, 0.5, 0.9))
    dataset = list(range(400))
    gate.remember(_predictor(initial, target), dataset)  # type: ignore[arg-type]
    assert gate.reference is not None
    np.testing.assert_allclose(gate.reference, window_losses(initial, target, (0.1, 0.5, 0.9)))
    model = torch.nn.Linear(1, 1)
    ok = gate.accepts(model, _predictor(better, target), dataset, model.state_dict())  # type: ignore[arg-type]
    assert ok is accepted
    assert InitialGate(0.0, (0.1,)).accepts(model, _predictor(better, target), [], {})  # type: ignore[arg-type]


def _trainer(data: PreparedData, cfg: TFTConfig, training: TrainingConfig) -> Trainer:
    torch.manual_seed(0)
    return Trainer(
        TemporalFusionTransformer(cfg),
        training,
        train_set=data.train,
        val_set=data.validation,
        quantiles=cfg.quantiles,
    )


def test_a_refused_epoch_keeps_the_initial_weights(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig
) -> None:
    # the direct output learns plainly; a gate that is never sure keeps the initial weights
    cfg = replace(
        tiny_model_config, output="direct", vol_signals=0, learn_spread=False, log_scale=False
    )
    training = replace(tiny_training, validate_initial=True, epochs=2, patience=5)
    sure = _trainer(tiny_data, cfg, training)
    sure.fit()
    assert sure.state.best_epoch >= 0  # a real improvement passes the 95% gate
    never = _trainer(tiny_data, cfg, training)
    initial = {k: v.clone() for k, v in never.model.state_dict().items()}
    never.gate.accepts = lambda *args: False  # type: ignore[method-assign]
    never.fit()
    assert never.state.best_epoch == -1
    assert never.state.epochs_without_improvement == 2
    for name, value in never.model.state_dict().items():
        assert torch.equal(value, initial[name]), name


def test_the_reference_is_rebuilt_after_a_resume(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig
) -> None:
    training = replace(tiny_training, validate_initial=True)
    trainer = _trainer(tiny_data, tiny_model_config, training)
    trainer.validate_initial()
    reference = trainer.gate.reference
    assert reference is not None and trainer.best_weights is not None
    trainer.train_epoch()  # the weights move
    fresh = InitialGate(0.95, tiny_model_config.quantiles)
    fresh.accepts(trainer.model, trainer.predict, tiny_data.validation, trainer.best_weights)
    assert fresh.reference is not None
    np.testing.assert_array_equal(fresh.reference, reference)
    moved = window_losses(*trainer.predict(tiny_data.validation), tiny_model_config.quantiles)
    assert not np.array_equal(moved, reference)  # and the model got its trained weights back


def test_windows_are_blocked_by_the_day_of_their_origin(tiny_data: PreparedData) -> None:
    blocks = window_blocks(tiny_data.validation)
    assert len(blocks) == len(tiny_data.validation)
    assert 1 < len(np.unique(blocks)) < len(blocks)
    assert np.all(np.diff(blocks) >= 0)  # chronological windows: days in order
