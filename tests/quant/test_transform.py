"""prepare_qat / convert / quantize_dynamic: what they quantize and how close the int8 is."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.dynamic as nnqd
from quant_helpers import batches, exact_static_linear, predict
from test_kernel import static_linear
from torch import nn
from torch.ao.nn.qat import Linear as QATLinear

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.data import PreparedData
from foxhunt.errors import FoxhuntError
from foxhunt.model.variable_grns import VariableGRNs
from foxhunt.quant import (
    QATConfig,
    convert,
    int8_structure,
    plan,
    prepare_qat,
    quantize_dynamic,
)
from foxhunt.quant.guard import check_exact, saturation
from foxhunt.quant.kernel import accelerate, available
from foxhunt.quant.serialize import int8_tensors, layout_digest, load_int8_tensors, pack, unpack
from foxhunt.quant.toolkit import engine
from foxhunt.quant.weights import ChannelFakeQuant, Int8Weight, int8_of


def test_plan_covers_every_weight_matrix(model_config: TFTConfig) -> None:
    model = TemporalFusionTransformer(model_config)
    found = plan(model)
    covered = set(found.linears) | {m for m, _, _ in found.weights} | set(found.lstms)
    linears = {n for n, m in model.named_modules() if isinstance(m, nn.Linear | nn.LSTM)}
    assert linears <= covered
    grns = {n for n, m in model.named_modules() if isinstance(m, VariableGRNs)}
    assert grns <= {m for m, _, dims in found.weights if dims == (0, 2)}
    assert "output_head" not in found.linears  # forecasts stay float; its weight is int8
    assert "past_vsn.selection.fc1" not in found.linears  # folded with the embeddings


def test_prepare_swaps_and_parametrizes_from_outside(model_config: TFTConfig) -> None:
    model = prepare_qat(TemporalFusionTransformer(model_config))
    assert not [n for n, m in model.named_modules() if type(m) is nn.Linear]
    assert sum(isinstance(m, QATLinear) for m in model.modules()) == len(
        plan(TemporalFusionTransformer(model_config)).linears
    )
    grns = model.past_vsn.real_grns
    assert isinstance(int8_of(grns, "glu_weight"), ChannelFakeQuant)
    assert isinstance(int8_of(model.lstm_encoder.layers[0], "weight_hh_l0"), ChannelFakeQuant)
    with pytest.raises(ValueError, match="already prepared"):
        prepare_qat(model)
    with pytest.raises(ValueError, match="convert"):
        quantize_dynamic(model)
    with pytest.raises(ValueError, match="prepare_qat"):
        convert(TemporalFusionTransformer(model_config))


def test_per_variable_weights_get_one_scale_per_variable_and_output(
    model_config: TFTConfig,
) -> None:
    model = prepare_qat(TemporalFusionTransformer(model_config)).train()
    grns = model.past_vsn.real_grns
    grns.glu_weight  # noqa: B018  one observation
    fake_quant = int8_of(grns, "glu_weight")
    assert isinstance(fake_quant, ChannelFakeQuant)
    n, _, out = grns.parametrizations.glu_weight.original.shape
    assert fake_quant.fake_quant.scale.shape == (n * out,)


def test_convert_stores_exactly_the_fake_quantized_weights(qat_model: nn.Module) -> None:
    grns = qat_model.past_vsn.real_grns
    before = {name: getattr(grns, name).detach().clone() for name in ("fc1_weight", "glu_weight")}
    head = qat_model.output_head.weight.detach().clone()
    lstm = qat_model.lstm_encoder.layers[0].weight_hh_l0.detach().clone()
    converted = convert(copy.deepcopy(qat_model))
    grns = converted.past_vsn.real_grns
    for name, weight in before.items():
        assert isinstance(int8_of(grns, name), Int8Weight)
        assert grns.parametrizations[name].original0.dtype == torch.int8
        assert torch.equal(getattr(grns, name), weight)  # int8 * scale == fake-quant weight
    assert torch.equal(converted.output_head.weight, head)
    assert torch.equal(converted.lstm_encoder.layers[0].weight_hh_l0, lstm)
    assert isinstance(int8_of(converted.lstm_encoder.layers[0], "weight_hh_l0"), Int8Weight)
    assert isinstance(converted.fusion_decoder.attention.query.module, nnq.Linear)


def test_int8_model_is_close_to_the_fake_quant_model(
    qat_model: nn.Module, data: PreparedData
) -> None:
    """8-bit activations (backend "onednn"): every path that computes the int8 model gives
    what QAT simulated, up to int32 accumulation order and requantization rounding (a few
    outputs, one step), or refuses to run. torch.ao's layers refuse on a CPU without VNNI
    (their 16-bit sums saturate); foxhunt's kernel is exact on AVX2 and AVX-512 alike."""
    reference = predict(qat_model, data)
    spread = reference.std()
    ao = convert(copy.deepcopy(qat_model))
    paths = {"torch.ao": ao}
    if available() is not None:
        paths["foxhunt kernel"] = copy.deepcopy(ao)
        assert accelerate(paths["foxhunt kernel"]) > 0
    for name, model in paths.items():
        if name == "torch.ao" and saturation("onednn") is not None:
            with pytest.raises(FoxhuntError, match=r"no VNNI: torch\.ao's onednn int8 Linear"):
                predict(model, data)
            continue
        int8 = predict(model, data)
        assert (int8 - reference).abs().mean() < 1e-4 * spread, name
        assert (int8 - reference).abs().max() < 0.01 * spread, name


def test_the_saturation_probe_tells_exact_from_saturating_sums(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe says exact exactly where torch.ao's static Linear computes the exact integer
    result of large activations; a saturating CPU is refused with one line naming a layer."""
    wrapper = static_linear(64, 128)
    x = torch.rand(50, 128) * 6 - 0.5  # most activations quantize near 255
    with torch.no_grad():
        exact = torch.equal(wrapper(x), exact_static_linear(wrapper, x))
    assert exact == (saturation("onednn") is None)
    fake = "a probe whose exact value is 64 gave 32.5 (saturating 16-bit sums)"
    monkeypatch.setattr("foxhunt.quant.guard.saturation", lambda engine: fake)
    model = nn.Sequential(nnq.Linear(4, 2))
    with pytest.raises(FoxhuntError, match=r"no VNNI.*gave 32\.5.*\(e\.g\. 0\)"):
        check_exact(model, "onednn")
    check_exact(nn.Sequential(nnqd.Linear(4, 2)), "onednn")  # dynamic layers: 7-bit, exact


def test_dynamic_ptq_is_close_to_fp32(
    float_model: TemporalFusionTransformer, data: PreparedData
) -> None:
    reference = predict(float_model, data)
    model = quantize_dynamic(copy.deepcopy(float_model))
    assert isinstance(model.fusion_decoder.attention.query, nnqd.Linear)
    assert isinstance(int8_of(model.lstm_decoder.layers[0], "weight_ih_l0"), Int8Weight)
    assert isinstance(int8_of(model.past_vsn.real_grns, "fc2_weight"), Int8Weight)
    out = predict(model, data)
    spread = reference.std()
    assert (out - reference).abs().mean() < 0.01 * spread
    assert (out - reference).abs().max() < 0.05 * spread


def test_fp32_lstm_option(model_config: TFTConfig, data: PreparedData) -> None:
    model = prepare_qat(TemporalFusionTransformer(model_config), QATConfig(lstm="fp32"))
    assert int8_of(model.lstm_encoder.layers[0], "weight_ih_l0") is None
    model.train()(next(batches(data)))
    assert type(convert(model).lstm_encoder.layers[0]) is nn.LSTM


@pytest.mark.parametrize("lstm", ["int8-weights", "dynamic"])
@pytest.mark.parametrize("mode", ["qat", "dynamic"])
def test_int8_state_round_trips_through_plain_tensors(
    mode: str, lstm: str, model_config: TFTConfig, data: PreparedData
) -> None:
    torch.manual_seed(0)
    model = TemporalFusionTransformer(model_config)
    if mode == "qat":
        prepare_qat(model, QATConfig(lstm=lstm)).train()(next(batches(data)))
        convert(model)
    else:
        quantize_dynamic(model, lstm=lstm)
    if lstm == "dynamic":
        assert isinstance(model.lstm_encoder.layers[0], nnqd.LSTM)
    tensors = int8_tensors(model)
    assert {t.dtype for t in tensors.values()} <= {torch.int8, torch.float32, torch.int64}
    packed = pack(tensors)
    with engine(QATConfig().backend):  # pack for the kernels the model was converted for
        rebuilt = int8_structure(TemporalFusionTransformer(model_config), mode=mode, lstm=lstm)
        like = int8_tensors(rebuilt)
        assert layout_digest(like) == layout_digest(tensors)
        load_int8_tensors(rebuilt, unpack(packed, like))
    again = int8_tensors(rebuilt)
    assert again.keys() == tensors.keys()
    assert all(torch.equal(again[k], tensors[k]) for k in tensors)
    if mode == "qat" and saturation(QATConfig().backend) is not None:
        if available() is None:  # torch.ao's layers refuse to run here: the tensors must do
            return
        accelerate(model), accelerate(rebuilt)
    assert torch.equal(predict(rebuilt, data), predict(model, data))
