from __future__ import annotations

import dataclasses

import pytest
import torch

from foxhunt import TemporalFusionTransformer, TFTBatch, TFTConfig, quantile_loss
from foxhunt.model import SEGMENTS
from foxhunt.training.precision import cpu_bf16_problem
from helpers import fitted, tiny_model

EXAMPLE = TFTConfig(
    num_static=5, num_past=220, num_future=10, hidden_size=64, variable_hidden_size=16,
    attention_heads=4, lookback=64, horizon=8, quantiles=(0.1, 0.5, 0.9), dropout=0.1,
)  # fmt: skip


def test_example_config_shapes(make_batch) -> None:
    torch.manual_seed(0)
    model = TemporalFusionTransformer(EXAMPLE).eval()
    out = model(make_batch(EXAMPLE, batch_size=2))
    assert out.quantiles.shape == (2, 8, 3)
    assert out.static_weights.shape == (2, 5)
    assert out.past_weights.shape == (2, 64, 220)
    assert out.future_weights.shape == (2, 8, 10)
    assert out.attention is not None and out.attention.shape == (2, 8, 72)


def test_top_level_children_are_the_segments(cfg: TFTConfig) -> None:
    names = {name for name, _ in TemporalFusionTransformer(cfg).named_children()}
    assert set(SEGMENTS) <= names
    assert names - set(SEGMENTS) == {"post_lstm_gate", "output_head"}


def test_importance_weights_sum_to_one(cfg: TFTConfig, make_batch) -> None:
    out = TemporalFusionTransformer(cfg).eval()(make_batch(cfg))
    assert out.static_weights.shape == (5, cfg.num_static + 2)
    for weights in (out.static_weights, out.past_weights, out.future_weights):
        torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert out.attention is not None
    torch.testing.assert_close(out.attention.sum(-1), torch.ones(5, cfg.horizon))


def test_every_parameter_gets_a_nonzero_gradient(cfg: TFTConfig, make_batch) -> None:
    torch.manual_seed(0)
    model = TemporalFusionTransformer(cfg).train()
    batch = make_batch(cfg, batch_size=8)
    assert batch.target is not None
    quantile_loss(model(batch).quantiles, batch.target, cfg.quantiles).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


def test_attention_is_skipped_in_training_unless_asked(cfg: TFTConfig, make_batch) -> None:
    model, batch = TemporalFusionTransformer(cfg).train(), make_batch(cfg)
    assert model(batch).attention is None
    attention = model(batch, return_attention=True).attention
    assert attention is not None and attention.shape == (5, cfg.horizon, cfg.lookback + cfg.horizon)


def test_same_seed_same_model_and_outputs(cfg: TFTConfig, make_batch) -> None:
    outputs = []
    for _ in range(2):
        torch.manual_seed(7)
        model = TemporalFusionTransformer(cfg).train()
        outputs.append(model(make_batch(cfg)).quantiles)  # dropout masks from the same seed
    assert torch.equal(outputs[0], outputs[1])


def test_no_static_and_no_future_inputs(small_config, make_batch) -> None:
    cfg = small_config(num_static=0, static_cardinalities=(), num_future=0)
    model = TemporalFusionTransformer(cfg).train()
    batch = make_batch(cfg)
    out = model(batch)
    assert out.quantiles.shape == (5, cfg.horizon, 3)
    assert out.static_weights.shape == (5, 0) and out.future_weights.shape == (5, cfg.horizon, 0)
    assert batch.target is not None
    quantile_loss(out.quantiles, batch.target, cfg.quantiles).backward()
    assert model.static_vsn.embedding.grad is not None  # the learned stand-ins are trained
    assert model.future_vsn.embedding.grad is not None


def test_two_lstm_layers_and_float64(small_config, make_batch) -> None:
    cfg = small_config(lstm_layers=2)
    model = TemporalFusionTransformer(cfg).double()
    batch = make_batch(cfg)
    batch = dataclasses.replace(
        batch, static=batch.static.double(), past=batch.past.double(), future=batch.future.double()
    )
    out = model(batch)
    assert out.quantiles.dtype == torch.float64 and torch.isfinite(out.quantiles).all()


@pytest.mark.skipif(
    cpu_bf16_problem() is not None,
    reason=f"this CPU cannot run the model in bf16 ({cpu_bf16_problem()}); "
    "--precision bf16 is refused here (tests/training/test_precision.py)",
)
def test_bf16_autocast_has_no_nan(cfg: TFTConfig, make_batch) -> None:
    model, batch = TemporalFusionTransformer(cfg), make_batch(cfg)
    for return_attention in (False, True):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(batch, return_attention=return_attention)
        assert torch.isfinite(out.quantiles).all()
        if out.attention is not None:
            assert not torch.isnan(out.attention).any()
    assert batch.target is not None
    quantile_loss(out.quantiles.float(), batch.target, cfg.quantiles).backward()
    bf16_grads = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    fp32 = model(batch, return_attention=True).quantiles
    quantile_loss(fp32, batch.target, cfg.quantiles).backward()
    reached = {name for name, p in model.named_parameters() if p.grad is not None}
    # every parameter that fp32 trains gets a gradient in bf16 too (none cut from the graph),
    # and each is finite
    assert len(reached) > 0 and set(bf16_grads) == reached
    for name, grad in bf16_grads.items():
        assert torch.isfinite(grad).all(), name


@pytest.mark.parametrize(
    ("field", "make_bad", "expected"),
    [
        ("past", lambda b: b.past[:, 1:], r"batch\.past: expected shape \[5, 7, 6\].*got \[5, 6, 6\]"),
        ("static", lambda b: b.static[:, :2], r"batch\.static: expected shape \[5, 3\].*got \[5, 2\]"),
        ("future", lambda b: b.future[:4], r"batch\.future: expected shape \[5, 3, 2\].*got \[4, 3, 2\]"),
        ("past", lambda b: b.past[0], r"batch\.past: expected shape \[B, 7, 6\], got \[7, 6\]"),
        ("past", lambda b: b.past.long(), r"batch\.past: expected a floating-point tensor"),
        ("static_categorical", lambda b: None, r"batch\.static_categorical: expected int64 .*got None"),
        ("static_categorical", lambda b: b.static_categorical.int(), r"batch\.static_categorical: expected dtype torch\.int64"),
        ("static_categorical", lambda b: b.static_categorical[:, :1], r"batch\.static_categorical: expected shape \[5, 2\]"),
    ],
)  # fmt: skip
def test_bad_inputs_name_the_tensor_and_both_shapes(cfg, make_batch, field, make_bad, expected):
    batch = make_batch(cfg)
    bad = dataclasses.replace(batch, **{field: make_bad(batch)})
    with pytest.raises(ValueError, match=expected):
        TemporalFusionTransformer(cfg)(bad)


def test_the_data_pipeline_feeds_the_model_typed_batches() -> None:
    """What the window dataset yields is a TFTBatch whose tensors have the shapes and dtypes
    the model checks, for a model fitted to that data (not a hand-made batch)."""
    from foxhunt.data import DataConfig, prepare_data
    from foxhunt.training.inference import sequential_batches

    data = prepare_data(
        DataConfig(synthetic_market="garch", synthetic_days=4, lookback=8, horizon=3)
    )
    cfg = fitted(tiny_model(lookback=8, horizon=3, hidden_size=8), data)
    batch = next(iter(sequential_batches(data.test, 4)))
    assert isinstance(batch, TFTBatch)
    assert batch.past.dtype == torch.float32 and batch.past.shape == (4, 8, cfg.num_past)
    assert batch.target is not None and batch.target.shape == (4, 3)
    out = TemporalFusionTransformer(cfg).eval()(batch)
    assert out.quantiles.shape == (4, 3, len(cfg.quantiles))


def test_parameter_gradients_have_the_strides_of_their_parameters(small_config, make_batch):
    """DDP's gradient buckets expect each gradient laid out like its parameter; a single
    variable's [1, d] bias gradient sliced from a wider one has a leading stride that
    ``is_contiguous()`` does not see, and DDP warns and copies every step."""
    from foxhunt.model.variable_grns import _strided

    cfg = small_config(num_static=1, static_cardinalities=())
    model = TemporalFusionTransformer(cfg).train()
    batch = make_batch(cfg)
    assert batch.target is not None
    quantile_loss(model(batch).quantiles, batch.target, cfg.quantiles).backward()
    strided = [n for n, p in model.named_parameters() if p.grad is not None and _strided(p.grad)]
    assert strided == []
