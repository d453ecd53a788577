"""Training a "baseline" output model: the initial weights compete, the loss can be weighted."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from foxhunt.data import PreparedData
from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.model.config import TFTConfig
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.training.config import TrainingConfig
from foxhunt.training.trainer import Trainer
from helpers import make_trainer


def _trainer(data: PreparedData, cfg: TFTConfig, training: TrainingConfig) -> Trainer:
    return make_trainer(data, replace(cfg, output="baseline"), training, seed=0)


def test_initial_weights_are_the_best_unless_beaten(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig
) -> None:
    # an absurd learning rate: no epoch beats the baseline, so its weights come back
    training = replace(tiny_training, validate_initial=True, lr=5.0, grad_clip=0.0)
    trainer = _trainer(tiny_data, tiny_model_config, training)
    initial = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    state = trainer.fit()
    assert state.initial_val_loss is not None
    assert state.best_val_loss <= state.initial_val_loss
    assert state.best_epoch == -1
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(value, initial[name]), name
    assert trainer.evaluate(tiny_data.validation) == pytest.approx(state.best_val_loss)


def test_inverse_scale_weighting_trains_and_needs_a_scale(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tiny_training: TrainingConfig
) -> None:
    training = replace(tiny_training, loss_weighting="inverse_scale", epochs=1)
    trainer = _trainer(tiny_data, tiny_model_config, training)
    state = trainer.fit()
    assert state.global_step == 6 and state.skipped_steps == 0
    batch = replace(tiny_data.train[0], scale=None)
    with pytest.raises(FoxhuntError, match="inverse_scale"):
        trainer.compute_loss(batch)


def test_training_config_validates_the_new_fields() -> None:
    with pytest.raises(ConfigError, match="loss_weighting"):
        TrainingConfig(loss_weighting="scale")
    with pytest.raises(ConfigError, match="validate_initial"):
        TrainingConfig(validate_initial=1)  # type: ignore[arg-type]


def test_the_untrained_baseline_model_is_the_realized_vol_row(
    tiny_data: PreparedData, tiny_model_config: TFTConfig
) -> None:
    """One profile and one causal RMS serve both: the realized-vol baseline of the metrics
    table forecasts, window for window, what a "baseline" model does before training."""
    from foxhunt.baselines import BASIS_POINTS
    from foxhunt.scoring import fit_run_baselines
    from foxhunt.training.inference import predict_windows

    torch.manual_seed(0)
    model = TemporalFusionTransformer(replace(tiny_model_config, output="baseline")).eval()
    pred, _, _ = predict_windows(model, tiny_data.test)
    unit = tiny_data.preprocessor.target_scale * BASIS_POINTS
    quantiles = tiny_model_config.quantiles
    window = tiny_data.preprocessor.baseline_window
    baselines = fit_run_baselines(tiny_data, quantiles, window=window)
    row = baselines.forecasts(tiny_data.test, tiny_data.preprocessor, quantiles)["realized_vol"]
    np.testing.assert_allclose(pred * unit, row, rtol=2e-4, atol=1e-6)
