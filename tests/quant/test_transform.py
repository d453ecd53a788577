"""prepare_qat / convert / quantize_dynamic: what they quantize and how close the int8 is."""

from __future__ import annotations

import copy

import pytest
import torch
from quant_helpers import batches, predict, train_steps
from torch import nn

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.data import PreparedData
from foxhunt.errors import ConfigError
from foxhunt.migrations import QAT
from foxhunt.model.variable_grns import VariableGRNs
from foxhunt.quant import (
    QATConfig,
    convert,
    int8_structure,
    plan,
    prepare_qat,
    quantize_dynamic,
)
from foxhunt.quant.kernel import accelerate, available
from foxhunt.quant.linear import FakeQuantLinear, QuantizedLinear
from foxhunt.quant.serialize import int8_tensors, layout_digest, load_int8_tensors, pack, unpack
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
    plain = [n for n, m in model.named_modules() if type(m) is nn.Linear]
    owners = {type(model.get_submodule(n.rpartition(".")[0])) for n in plain}
    assert plain and owners == {FakeQuantLinear}  # every Linear called as a module is wrapped
    assert sum(isinstance(m, FakeQuantLinear) for m in model.modules()) == len(
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
    query = converted.fusion_decoder.attention.query
    assert isinstance(query, QuantizedLinear) and query.static
    assert query.weight.dtype == torch.int8


@pytest.mark.parametrize("backend", ["onednn", "x86"])
def test_int8_model_computes_the_fake_quant_model(
    backend: str, qat_model: nn.Module, float_model: TemporalFusionTransformer, data: PreparedData
) -> None:
    """8-bit ("onednn") and 7-bit ("x86") activation grids: the converted model's own layers
    compute what QAT simulated bit for bit (the same ATen fake-quant ops on the same grids);
    foxhunt's kernel computes it up to float32 rounding of the rescale, which moves a few
    outputs one step of their grid. Exact on AVX2 and AVX-512 alike."""
    if backend == "onednn":
        fake_quant = qat_model
    else:
        torch.manual_seed(1)
        config = QATConfig(freeze_after=3, backend="x86")
        fake_quant = prepare_qat(copy.deepcopy(float_model), config)
        fake_quant = train_steps(fake_quant, data, float_model.config, 5)
    expected_top = 255 if backend == "onednn" else 127
    reference = predict(fake_quant, data)
    converted = convert(copy.deepcopy(fake_quant))
    layers = [m for m in converted.modules() if isinstance(m, QuantizedLinear)]
    assert layers and all(m.activation_max == expected_top for m in layers)
    assert torch.equal(predict(converted, data), reference)
    if available() is not None:
        fast = copy.deepcopy(converted)
        assert accelerate(fast) > 0
        int8, spread = predict(fast, data), reference.std()
        assert (int8 - reference).abs().mean() < 1e-4 * spread
        assert (int8 - reference).abs().max() < 0.01 * spread


def test_lstm_modes_of_torch_ao_runs_read_as_int8_weights() -> None:
    assert QATConfig.from_dict(QAT.fields_of({"lstm": "dynamic"})).lstm == "int8-weights"
    with pytest.raises(ConfigError, match=r"gone with torch\.ao"):
        QATConfig(lstm="dynamic")  # type: ignore[arg-type]
    assert QATConfig(backend="fbgemm").activation_max == 127
    assert QATConfig(backend="qnnpack").activation_max == 255


def test_dynamic_ptq_is_close_to_fp32(
    float_model: TemporalFusionTransformer, data: PreparedData
) -> None:
    reference = predict(float_model, data)
    model = quantize_dynamic(copy.deepcopy(float_model))
    query = model.fusion_decoder.attention.query
    assert isinstance(query, QuantizedLinear) and not query.static
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


@pytest.mark.parametrize("lstm", ["int8-weights", "fp32"])
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
    tensors = int8_tensors(model)
    allowed = {torch.int8, torch.float32, torch.int32, torch.int64}
    assert {t.dtype for t in tensors.values()} <= allowed
    packed = pack(tensors)
    rebuilt = int8_structure(TemporalFusionTransformer(model_config), mode=mode, lstm=lstm)
    like = int8_tensors(rebuilt)
    assert layout_digest(like) == layout_digest(tensors)
    load_int8_tensors(rebuilt, unpack(packed, like))
    again = int8_tensors(rebuilt)
    assert again.keys() == tensors.keys()
    assert all(torch.equal(again[k], tensors[k]) for k in tensors)
    assert torch.equal(predict(rebuilt, data), predict(model, data))
    wrong = dict(again)
    wrong[next(iter(wrong))] = torch.zeros(3)
    with pytest.raises(ValueError, match="expected"):
        load_int8_tensors(rebuilt, wrong)
