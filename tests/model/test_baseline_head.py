"""The "baseline" output form: at initialization the model IS the rolling-volatility baseline."""

from dataclasses import replace

import pytest
import torch

from foxhunt import TFTConfig
from foxhunt.errors import ConfigError
from foxhunt.migrations import sections_of
from foxhunt.model.loss import quantile_loss
from foxhunt.model.tft import TemporalFusionTransformer
from helpers import make_batch
from helpers import small_model as small_config


@pytest.mark.parametrize("learn_spread", [False, True])
def test_untrained_model_forecasts_the_baseline_quantiles_exactly(learn_spread: bool) -> None:
    cfg = small_config(output="baseline", learn_spread=learn_spread, quantiles=(0.1, 0.5, 0.9))
    torch.manual_seed(0)
    model = TemporalFusionTransformer(cfg)
    batch = make_batch(cfg, batch_size=6)
    assert batch.scale is not None
    z = torch.special.ndtri(torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)).float()
    for mode in (model.train, model.eval):
        mode()
        out = model(batch).quantiles
        assert torch.equal(out, batch.scale[..., None] * z)


def test_the_correction_learns() -> None:
    cfg = small_config(output="baseline", learn_spread=True, dropout=0.0)
    model = TemporalFusionTransformer(cfg)
    batch = make_batch(cfg)
    assert batch.target is not None
    loss = quantile_loss(model(batch).quantiles, batch.target, cfg.quantiles)
    loss.backward()
    assert model.output_head.weight.grad is not None
    assert model.output_head.weight.grad.abs().sum() > 0
    assert model.baseline is not None and model.baseline.log_spread is not None
    assert model.baseline.log_spread.grad is not None
    assert model.baseline.log_spread.grad.abs().sum() > 0


def test_a_baseline_model_needs_a_scale() -> None:
    cfg = small_config(output="baseline")
    model = TemporalFusionTransformer(cfg)
    batch = replace(make_batch(cfg), scale=None)
    with pytest.raises(ValueError, match=r'batch.scale: a model with output="baseline"'):
        model(batch)
    with pytest.raises(ValueError, match=r"batch.scale: expected shape \[5, 3\]"):
        model(replace(batch, scale=torch.ones(5, 2)))


def test_direct_models_are_unchanged() -> None:
    cfg = small_config()
    model = TemporalFusionTransformer(cfg)
    assert model.baseline is None
    assert model.output_head.weight.abs().sum() > 0
    assert make_batch(cfg).scale is None
    model(make_batch(cfg))


def test_config_validates_the_output_form() -> None:
    with pytest.raises(ConfigError, match=r"TFTConfig\.output='scaled'"):
        small_config(output="scaled")
    with pytest.raises(ConfigError, match="learn_spread"):
        small_config(learn_spread=True)
    cfg = small_config(output="baseline", learn_spread=True)
    assert TFTConfig.from_dict(cfg.to_dict()) == cfg


def test_inverse_scale_loss_is_the_loss_of_standardized_forecasts() -> None:
    g = torch.Generator().manual_seed(0)
    pred, target = torch.randn(4, 3, 2, generator=g), torch.randn(4, 3, generator=g)
    scale = torch.rand(4, 3, generator=g) + 0.5
    weighted = quantile_loss(pred, target, (0.2, 0.8), scale)
    standardized = quantile_loss(pred / scale[..., None], target / scale, (0.2, 0.8))
    assert weighted == pytest.approx(float(standardized), rel=1e-6)


def test_the_default_is_the_baseline_form_and_old_runs_load_as_direct() -> None:
    fields = small_config().to_dict()
    del fields["output"]
    assert TFTConfig(**fields).output == "baseline"  # what `foxhunt train` trains by default
    old = sections_of({"model": fields})["model"]  # a config.json from before the field
    assert TFTConfig.from_dict(old).output == "direct"


def test_signal_weight_leans_the_scale_toward_the_fast_volatility() -> None:
    cfg = small_config(output="baseline", vol_signals=1, quantiles=(0.1, 0.5, 0.9))
    model = TemporalFusionTransformer(cfg).eval()
    batch = make_batch(cfg, batch_size=6)
    assert batch.scale is not None and batch.vol_signal is not None
    z = torch.special.ndtri(torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)).float()
    assert torch.equal(model(batch).quantiles, batch.scale[..., None] * z)  # w starts at 0
    assert model.baseline is not None and model.baseline.signal_weight is not None
    with torch.no_grad():
        model.baseline.signal_weight.fill_(0.5)
    # base * exp(0.5 log(fast / base)) = sqrt(base * fast): the geometric mean of the two
    fast = batch.scale * batch.vol_signal.exp()
    want = torch.sqrt(batch.scale * fast)[..., None] * z
    torch.testing.assert_close(model(batch).quantiles, want)


def test_a_model_with_signals_needs_them() -> None:
    cfg = small_config(output="baseline", vol_signals=1)
    model = TemporalFusionTransformer(cfg)
    batch = replace(make_batch(cfg), vol_signal=None)
    with pytest.raises(ValueError, match=r"batch.vol_signal: this model leans on 1"):
        model(batch)
    with pytest.raises(ConfigError, match="vol_signals"):
        small_config(output="direct", vol_signals=1)


def test_configs_saved_before_signals_load_without_them() -> None:
    saved = small_config(output="baseline").to_dict()
    del saved["vol_signals"]
    assert TFTConfig.from_dict(sections_of({"model": saved})["model"]).vol_signals == 0


def test_the_log_scale_output_multiplies_every_quantile_of_a_step() -> None:
    """With log_scale (the default for "baseline") the head's channel 0 is a log-volatility
    adjustment: at 0 the model is the baseline; set to log 2 on the bias, every quantile of
    every step doubles, where the additive correction would have to learn it quantile by
    quantile."""
    cfg = small_config(output="baseline", learn_spread=False, quantiles=(0.1, 0.5, 0.9))
    assert cfg.log_scale is True
    model = TemporalFusionTransformer(cfg).eval()
    assert model.output_head.out_features == 4
    batch = make_batch(cfg, batch_size=6)
    assert batch.scale is not None
    z = torch.special.ndtri(torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)).float()
    assert torch.equal(model(batch).quantiles, batch.scale[..., None] * z)
    with torch.no_grad():
        model.output_head.bias[0] = torch.log(torch.tensor(2.0))
    torch.testing.assert_close(model(batch).quantiles, 2 * batch.scale[..., None] * z)


def test_the_log_scale_gets_a_gradient_from_the_first_step() -> None:
    cfg = small_config(output="baseline", dropout=0.0)
    model = TemporalFusionTransformer(cfg)
    batch = make_batch(cfg)
    assert batch.target is not None
    quantile_loss(model(batch).quantiles, batch.target, cfg.quantiles).backward()
    grad = model.output_head.bias.grad
    assert grad is not None and grad[0].abs() > 0


def test_runs_saved_before_log_scale_load_without_it() -> None:
    saved = small_config(output="baseline").to_dict()
    del saved["log_scale"]  # migrated on load (foxhunt/migrations.py)
    assert TFTConfig.from_dict(sections_of({"model": saved})["model"]).log_scale is False
    assert small_config().log_scale is False  # "direct": no scale to adjust
    with pytest.raises(ConfigError, match="log_scale"):
        small_config(output="direct", log_scale=True)
