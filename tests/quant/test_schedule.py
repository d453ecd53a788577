"""Observer warm-up and freeze, and QAT composed with activation checkpointing."""

from __future__ import annotations

import copy

import pytest
import torch
from quant_helpers import batches, loss_of
from torch import Tensor, nn

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.data import PreparedData
from foxhunt.model.checkpointing import apply_checkpointing
from foxhunt.quant import QATConfig, prepare_qat, schedule_of
from foxhunt.quant.fake import ActivationQuant, WeightQuant, fake_quantizers
from foxhunt.quant.linear import FakeQuantLinear
from foxhunt.quant.schedule import observers_paused
from foxhunt.quant.weights import ChannelFakeQuant, int8_of, original_of, to_channels


def scales(model: nn.Module) -> list[Tensor]:
    return [fq.scale.clone() for fq in fake_quantizers(model)]


def changed(before: list[Tensor], after: list[Tensor]) -> int:
    return sum(
        a.shape != b.shape or not torch.equal(a, b) for a, b in zip(before, after, strict=True)
    )


def test_observers_freeze_after_the_warm_up(model_config: TFTConfig, data: PreparedData) -> None:
    torch.manual_seed(0)
    model = prepare_qat(TemporalFusionTransformer(model_config), QATConfig(freeze_after=3))
    schedule = schedule_of(model)
    assert schedule is not None
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    source = batches(data)
    moved = []
    for _ in range(6):
        before = scales(model)
        model.train()
        optimizer.zero_grad()
        loss_of(model, next(source), model_config).backward()
        optimizer.step()
        moved.append(changed(before, scales(model)))
        assert not any(fq.observing for fq in fake_quantizers(model))
    assert all(moved[:3]) and moved[3:] == [0, 0, 0]  # weights kept training; scales did not
    assert schedule.frozen and int(schedule.steps) == 6


def test_eval_and_paused_passes_do_not_observe(model_config: TFTConfig, data: PreparedData) -> None:
    model = prepare_qat(TemporalFusionTransformer(model_config), QATConfig(freeze_after=100))
    batch = next(batches(data))
    model.train()(batch)  # first observation
    before = scales(model)
    with torch.no_grad():
        model.eval()(batch)
    with observers_paused(model):
        model.train()(batch)
    assert changed(before, scales(model)) == 0
    assert int(schedule_of(model).steps) == 1  # type: ignore[union-attr]


def initial_weight_grids(model: nn.Module) -> list[tuple[WeightQuant, Tensor]]:
    """Each weight quantizer of ``model`` with the per-channel scales of its weight as it is
    now (the grid a first observation of that weight gives)."""
    found = []
    for module in model.modules():
        if isinstance(module, FakeQuantLinear):
            found.append((module.weight_quant, module.linear.weight))
        for tensor in list(getattr(module, "parametrizations", {})):
            fake_quant = int8_of(module, tensor)
            if isinstance(fake_quant, ChannelFakeQuant):
                weight = to_channels(original_of(module, tensor), fake_quant.channel_dims)
                found.append((fake_quant.fake_quant, weight))
    grids = []
    for quantizer, weight in found:
        fresh = WeightQuant()
        fresh.observe(weight)
        grids.append((quantizer, fresh.scale))
    return grids


@pytest.mark.parametrize("before", ["evaluation", "paused measurement"])
def test_passes_before_the_first_training_step_quantize_weights(
    model_config: TFTConfig, data: PreparedData, before: str
) -> None:
    """Weight grids come from the initial weights: evaluation (or a paused measurement)
    before any training step runs on them, and moves no activation range."""
    torch.manual_seed(0)
    float_model = TemporalFusionTransformer(model_config).eval()
    model = prepare_qat(copy.deepcopy(float_model))  # the same weights, fake-quantized
    grids = initial_weight_grids(model)
    assert len(grids) > 10  # the Linear layers, the LSTM gates, the per-variable GRNs
    batch = next(batches(data))
    if before == "evaluation":
        with torch.no_grad():
            quantized = model.eval()(batch).past_weights
    else:
        with observers_paused(model):
            loss_of(model.train(), batch, model_config).backward()
        with torch.no_grad(), observers_paused(model):
            quantized = model.eval()(batch).past_weights
    for quantizer, scale in grids:
        torch.testing.assert_close(quantizer.scale, scale, rtol=0, atol=0)
    assert not any(fq.observed for fq in fake_quantizers(model) if isinstance(fq, ActivationQuant))
    with torch.no_grad():
        plain = float_model(batch).past_weights  # (the head starts at zero: not the forecast)
    assert not torch.equal(quantized, plain)  # the pass ran on the quantized weights
    assert int(schedule_of(model).steps) == 0  # type: ignore[union-attr]


def test_a_deep_copy_has_its_own_schedule(model_config: TFTConfig, data: PreparedData) -> None:
    model = prepare_qat(TemporalFusionTransformer(model_config))
    twin = copy.deepcopy(model)
    twin.train()(next(batches(data)))
    assert int(schedule_of(twin).steps) == 1  # type: ignore[union-attr]
    assert int(schedule_of(model).steps) == 0  # type: ignore[union-attr]


def grads_and_state(
    model: nn.Module, data: PreparedData, cfg: TFTConfig, steps: int
) -> list[tuple[dict[str, Tensor], dict[str, Tensor]]]:
    """Per step: gradients, then the state after an SGD update (same dropout masks)."""
    out = []
    source = batches(data)
    model.train()
    for step in range(steps):
        torch.manual_seed(100 + step)
        model.zero_grad()
        loss_of(model, next(source), cfg).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.sub_(0.05 * p.grad)
        out.append((grads, {k: v.clone() for k, v in model.state_dict().items()}))
    return out


@pytest.mark.parametrize("order", ["qat_then_checkpointing", "checkpointing_then_qat"])
def test_qat_with_checkpointing_gives_the_same_gradients(
    order: str, model_config: TFTConfig, data: PreparedData
) -> None:
    """Bitwise, during the warm-up (observers on: recompute must not observe again) and after."""
    torch.manual_seed(0)
    plain = TemporalFusionTransformer(model_config)
    checkpointed = copy.deepcopy(plain)
    qat = QATConfig(freeze_after=2)
    prepare_qat(plain, qat)
    if order == "qat_then_checkpointing":
        prepare_qat(checkpointed, qat)
        apply_checkpointing(checkpointed, "full")
    else:
        apply_checkpointing(checkpointed, "full")
        prepare_qat(checkpointed, qat)
    expected = grads_and_state(plain, data, model_config, 4)
    got = grads_and_state(checkpointed, data, model_config, 4)
    for (g_plain, s_plain), (g_ckpt, s_ckpt) in zip(expected, got, strict=True):
        assert g_plain.keys() == g_ckpt.keys()
        assert all(torch.equal(g_plain[k], g_ckpt[k]) for k in g_plain)
        assert all(torch.equal(s_plain[k], s_ckpt[k]) for k in s_plain)  # observers: once


def test_observing_during_recompute_would_be_caught(
    model_config: TFTConfig, data: PreparedData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check above can fail: with observers left on, recompute observes twice."""
    monkeypatch.setattr("foxhunt.quant.schedule.ObserverSchedule._after", lambda *a: None)
    torch.manual_seed(0)
    plain = prepare_qat(TemporalFusionTransformer(model_config), QATConfig(freeze_after=10))
    checkpointed = copy.deepcopy(plain)
    apply_checkpointing(checkpointed, "full")
    expected = grads_and_state(plain, data, model_config, 2)[-1][0]
    got = grads_and_state(checkpointed, data, model_config, 2)[-1][0]
    assert not all(torch.equal(expected[k], got[k]) for k in expected)


def test_the_schedule_state_is_its_pass_count(model_config: TFTConfig, data: PreparedData) -> None:
    """nn.Module's state_dict is all of the schedule's state; the model's carries it."""
    model = prepare_qat(TemporalFusionTransformer(model_config), QATConfig(freeze_after=2))
    model.train()
    for batch in (next(batches(data)),) * 2:
        model(batch)
    schedule = schedule_of(model)
    assert schedule is not None and schedule.frozen
    assert set(schedule.state_dict()) == {"steps"}
    assert int(model.state_dict()["qat_observers.steps"]) == 2
    fresh = prepare_qat(TemporalFusionTransformer(model_config), QATConfig(freeze_after=2))
    restored = schedule_of(fresh)
    assert restored is not None and not restored.frozen
    restored.load_state_dict(schedule.state_dict())
    assert restored.frozen and int(restored.steps) == 2
