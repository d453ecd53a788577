"""The saved-bytes meter counts exactly, and counts what checkpointing keeps."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.bench.memory import random_batch
from foxhunt.memory.saved import INPUTS, TOP_LEVEL, SavedTensorMeter, measure_saved
from foxhunt.model.checkpointing import CheckpointedForward, apply_checkpointing
from foxhunt.task import batch_loss

F32 = 4


def test_linear_relu_chain_counted_by_hand() -> None:
    """x -> Linear(32, 64) -> ReLU -> Linear(64, 16) -> ReLU -> sum, x without grad.

    addmm saves its input x (for the weight gradient), ReLU its output, which the second
    addmm saves again (one storage, counted once), the last ReLU its output; sum saves
    nothing. The second addmm also saves W2^T, a view of a parameter: excluded.
    """
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16), nn.ReLU())
    x = torch.randn(10, 32)
    with SavedTensorMeter(model) as meter:
        loss = model(x).sum()
    report = meter.report()
    assert report.total == 10 * (32 + 64 + 16) * F32
    assert report.by_owner == {"0": 10 * 32 * F32, "1": 10 * 64 * F32, "3": 10 * 16 * F32}
    with SavedTensorMeter() as meter:  # no model: the parameter is not known, so it counts
        loss = model(x).sum()
    assert meter.report().total == 10 * (32 + 64 + 16) * F32 + 16 * 64 * F32
    loss.backward()  # the hooks are transparent: backward works as usual
    assert model[0].weight.grad is not None


def test_views_count_once_and_dead_storages_not_at_all() -> None:
    a = torch.randn(100, requires_grad=True)
    with SavedTensorMeter() as meter:
        b = a.exp()  # saves its output b
        c = (b[:50] * b[50:]).sum()  # saves two views of b: the same storage
        (a * 2).exp().sum()  # a dropped branch: exp saves its output, which dies with it
    assert meter.report().by_owner == {TOP_LEVEL: 100 * F32}
    del c


def test_torch_keeps_nested_checkpoint_inputs_out_of_sight_of_hooks() -> None:
    """What non-reentrant checkpoint keeps: a top-level tensor argument goes through the
    saved-tensor hooks, a tensor inside a tuple is held by reference and does not. Hence
    apply_checkpointing passes every tensor as a top-level argument."""
    a = torch.randn(1000, requires_grad=True)
    nested = (torch.randn(3000, requires_grad=True),)
    with SavedTensorMeter() as meter:
        out = checkpoint(lambda x, t: (x.sin() * t[0][:1000]).sum(), a, nested, use_reentrant=False)
    assert meter.report().total == 1000 * F32  # ``nested`` is kept too, yet unseen
    del out


def small_model(**overrides: Any) -> tuple[TemporalFusionTransformer, Any]:
    kwargs: dict[str, Any] = {
        "num_static": 3,
        "num_past": 6,
        "num_future": 2,
        "hidden_size": 16,
        "variable_hidden_size": 4,
        "lookback": 7,
        "horizon": 3,
        "lstm_layers": 2,
    }
    cfg = TFTConfig(**{**kwargs, **overrides})
    torch.manual_seed(0)
    model = TemporalFusionTransformer(cfg).train()
    batch = random_batch(cfg, 5)
    return model, lambda: batch_loss(model, batch, cfg.quantiles)


def test_checkpointed_segment_is_charged_for_its_kept_inputs() -> None:
    """The LSTM encoder is called with (past, (h0, c0)): all three tensors (two of them in a
    tuple) and the stashed RNG state are what checkpointing keeps, and the meter counts them."""
    model, loss_fn = small_model()
    seen: list[Tensor] = []
    model.lstm_encoder.register_forward_pre_hook(
        lambda m, args: seen.extend([args[0], *args[1]]) if not seen else None
    )
    apply_checkpointing(model, ("lstm_encoder",))
    report = measure_saved(model, loss_fn)
    kept = sum(t.untyped_storage().nbytes() for t in seen) + torch.get_rng_state().nbytes
    assert len(seen) == 3
    assert report.by_owner["lstm_encoder" + INPUTS] == kept
    assert report.checkpoint_inputs == kept
    assert "lstm_encoder" not in report.by_owner, "nothing inside the segment stays saved"


def test_checkpointing_saves_bytes_and_the_meter_attributes_them() -> None:
    model, loss_fn = small_model()
    plain = measure_saved(model, loss_fn)
    assert set(plain.by_owner) >= {"past_vsn", "lstm_encoder", "fusion_decoder"}
    assert plain.checkpoint_inputs == 0
    apply_checkpointing(model, "full")
    full = measure_saved(model, loss_fn)
    assert 0 < full.checkpoint_inputs < full.total < plain.total
    inside = [o for o in full.by_owner if o in plain.by_owner and o.endswith("_vsn")]
    assert inside == [], "checkpointed segments keep only their inputs"


def test_nested_meters_each_count_what_was_saved_inside_them() -> None:
    a = torch.randn(100, requires_grad=True)
    with SavedTensorMeter() as outer:
        b = a.exp()  # saves b
        with SavedTensorMeter() as inner:
            c = (a * 3).sin()  # saves a * 3
    assert inner.report().total == 100 * F32
    assert outer.report().total == 200 * F32
    del b, c


@pytest.mark.parametrize("policy", ["full", ("past_vsn", "fusion_decoder"), ("lstm_encoder",)])
def test_a_checkpointed_forward_tells_what_the_plain_one_saves(policy: Any) -> None:
    """``plain`` of one checkpointed forward equals what a plain forward measures: the startup
    report needs no second forward. The same draws: dropout masks match, so do the shapes."""
    model, loss_fn = small_model(dropout=0.3)
    torch.manual_seed(1)
    plain = measure_saved(model, loss_fn)
    assert plain.plain_by_owner == plain.by_owner  # nothing checkpointed: one and the same
    apply_checkpointing(model, policy)
    torch.manual_seed(1)
    checkpointed = measure_saved(model, loss_fn)
    assert checkpointed.total < plain.total
    assert checkpointed.plain == plain.total
    assert checkpointed.plain_by_owner == plain.by_owner  # the planner reads it by segment


class _Exp(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        b = x.exp()  # saves its output b
        (x * 2).exp().sum()  # a dropped branch: its saved output dies with its node
        return b[:50] * b[50:]  # saves two views of b: one storage


def test_plain_counts_storages_once_and_only_while_their_node_lives() -> None:
    """Inside a checkpointed segment: b saved by exp and by mul (one storage, counted once),
    a dropped branch's saved output (dead: not counted); outside, the segment's output saved
    again by sin. The input ``a`` is what checkpoint keeps, not what plain saves."""
    a = torch.randn(100, requires_grad=True)
    segment = _Exp()
    segment.forward = CheckpointedForward(segment, "segment", True)  # type: ignore[method-assign]
    with SavedTensorMeter() as meter:
        c = segment(a).sin().sum()  # saves the segment's output
    report = meter.report()
    assert report.plain == (100 + 50) * F32
    assert report.checkpoint_inputs == 100 * F32 + torch.get_rng_state().nbytes
    c.backward()  # the counting hook is transparent to the recompute
    torch.testing.assert_close(a.grad, _grad_of_plain(a))


def _grad_of_plain(a: Tensor) -> Tensor:
    x = a.detach().requires_grad_()
    _Exp()(x).sin().sum().backward()
    assert x.grad is not None
    return x.grad
