"""Quantization as transforms of a TFT: ``prepare_qat`` / ``convert``, ``quantize_dynamic``.

The model's files do not know about quantization: these functions swap or parametrize its
layers from outside, in place, and return the model.

=============================  ====================================  ==========================
part                           QAT (``prepare_qat``)                 int8 model (``convert``)
=============================  ====================================  ==========================
Linear layers called as        torch.ao QAT Linear in a QuantWrapper: ``nnq.Linear`` between
modules: GRN fc1/context/fc2/  weight fake-quant per output channel,  Quantize/DeQuantize:
skip, every GLU projection,    input and output activations fake-    int8 x int8 GEMM, frozen
attention query/key/value/out  quantized (observed, per tensor)      activation scales
LSTM gate weights              ChannelFakeQuant per gate unit        Int8Weight, FP32 kernel
(``QATConfig.lstm``)           (activations: not fake-quantized)     (default); or dynamic
                                                                     int8 ``nnqd.LSTM``
per-variable GRN weights       ChannelFakeQuant per variable and     Int8Weight: int8 stored,
[n, fan_in, fan_out]; VSN      output unit / per output unit         dequantized to float32
selection fc1/skip (folded                                           when read (the fused op
with the embeddings); output                                         and the folds run FP32)
head
biases, LayerNorms,            FP32                                  FP32
embeddings, attention scores
=============================  ====================================  ==========================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.dynamic as nnqd
import torch.ao.quantization as tq
from torch import nn
from torch.ao.nn.qat import Linear as QATLinear
from torch.nn.utils import parametrize

from foxhunt.model.variable_grns import VariableGRNs
from foxhunt.model.variable_selection import VariableSelectionNetwork
from foxhunt.quant.config import QATConfig
from foxhunt.quant.guard import guard
from foxhunt.quant.schedule import SCHEDULE_NAME, ObserverSchedule, schedule_of, set_observers
from foxhunt.quant.toolkit import (
    dynamic_lstm,
    dynamic_qconfig,
    engine,
    make_qweight,
    qat_qconfig,
    quiet,
)
from foxhunt.quant.weights import (
    ChannelFakeQuant,
    channel_shape,
    int8_of,
    original_of,
    quantize_per_channel,
    store_int8,
)

WeightSpec = tuple[str, str, tuple[int, ...]]  # (module name, tensor name, channel dims)
MODES = ("qat", "dynamic")  # int8 from a QAT run (static activations) / post-training dynamic


@dataclass(frozen=True)
class Plan:
    """Where quantization applies in a float TFT, by qualified module name."""

    linears: tuple[str, ...]
    """nn.Linear layers called as modules: int8 compute."""
    weights: tuple[WeightSpec, ...]
    """Weights read directly (fused op, folds, output head): int8 storage, float compute."""
    lstms: tuple[str, ...]
    """nn.LSTM layers: dynamic int8."""

    def lstm_weights(self, model: nn.Module) -> list[WeightSpec]:
        return [
            (name, w, (0,))
            for name in self.lstms
            for w in lstm_weight_names(model.get_submodule(name))
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "int8_linears": list(self.linears),
            "int8_weights_float_compute": [f"{m}.{t}" for m, t, _ in self.weights],
            "lstms": list(self.lstms),
        }


def plan(model: nn.Module, *, lstm: str = "int8-weights") -> Plan:
    """Classify the layers of a float (not yet transformed) TFT; ``lstm`` as QATConfig's."""
    weights: list[WeightSpec] = []
    for name, module in model.named_modules():
        prefix = f"{name}." if name else ""
        if isinstance(module, VariableSelectionNetwork):  # fc1/skip are folded, never called
            for part in ("fc1", "skip"):
                if getattr(module.selection, part) is not None:
                    weights.append((f"{prefix}selection.{part}", "weight", (0,)))
        elif isinstance(module, VariableGRNs):  # stacked [n, fan_in, fan_out] weights
            parts = ["fc1", "fc2", "glu"] + (["skip"] if module.has_skip else [])
            weights += [(name, f"{part}_weight", (0, 2)) for part in parts]
    if isinstance(getattr(model, "output_head", None), nn.Linear):  # forecasts stay float
        weights.append(("output_head", "weight", (0,)))
    direct = {m for m, _, _ in weights}
    linears = tuple(
        name for name, m in model.named_modules() if type(m) is nn.Linear and name not in direct
    )
    lstms = tuple(n for n, m in model.named_modules() if type(m) is nn.LSTM and lstm != "fp32")
    return Plan(linears=linears, weights=tuple(weights), lstms=lstms)


def lstm_weight_names(lstm: nn.Module) -> list[str]:
    names = cast(list[str], lstm._flat_weights_names)
    return [n for n in names if n.startswith("weight_")]


def _replace(model: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, new)


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def prepare_qat(model: nn.Module, config: QATConfig | None = None) -> nn.Module:
    """Fake-quantize ``model`` in place for quantization-aware training; returns it.

    Composes with ``apply_checkpointing`` (either order) and with DDP (wrap last). Observers
    run only in train-mode passes of the first ``config.freeze_after`` steps (see
    :mod:`foxhunt.quant.schedule`).
    """
    if schedule_of(model) is not None:
        raise ValueError("this model is already prepared for QAT")
    config = config or QATConfig()
    found = plan(model, lstm=config.lstm)
    qconfig = qat_qconfig(config.backend)
    device = _device(model)
    with quiet():
        for name in found.linears:
            linear = model.get_submodule(name)
            wrapper = tq.QuantWrapper(linear)
            wrapper.qconfig = qconfig  # type: ignore[assignment]
            tq.prepare_qat(wrapper.train(), inplace=True)
            _replace(model, name, wrapper.train(linear.training).to(device))
        for module_name, tensor, dims in [*found.weights, *found.lstm_weights(model)]:
            fake_quant = ChannelFakeQuant(dims, qconfig.weight()).to(device)
            parametrize.register_parametrization(
                model.get_submodule(module_name), tensor, fake_quant
            )
    _observe_weights(model)
    schedule = ObserverSchedule(config).to(device)
    model.add_module(SCHEDULE_NAME, schedule)
    schedule.attach(model)
    set_observers(model, False)
    return model


@torch.no_grad()
def _observe_weights(model: nn.Module) -> None:
    """Give every weight quantizer its per-channel grid from the initial weights, so that a
    pass with observers off (evaluation, a paused measurement) before the first training
    step already quantizes on the right grid (and with scales of the right shape)."""
    for module in model.modules():
        if isinstance(module, QATLinear):
            module.weight_fake_quant.enable_observer()
            module.weight_fake_quant(module.weight)
            module.weight_fake_quant.disable_observer()
        for tensor in list(getattr(module, "parametrizations", {})):
            fake_quant = int8_of(module, tensor)
            if isinstance(fake_quant, ChannelFakeQuant):
                fake_quant.fake_quant.enable_observer()
                fake_quant(original_of(module, tensor))  # observes once, then disables


@torch.no_grad()
def convert(model: nn.Module) -> nn.Module:
    """Turn a QAT-prepared model into its int8 CPU model, in place (eval mode); returns it.

    Uses the frozen scales: the int8 model computes what the fake-quant model simulated, up
    to int32 accumulation and requantization rounding. On a CPU where torch.ao's int8 Linear
    is not exact (no VNNI) the model refuses to run until ``kernel.accelerate`` swaps in
    foxhunt's exact kernel (``quant/guard.py``).
    """
    schedule = schedule_of(model)
    if schedule is None:
        raise ValueError("convert() needs a model prepared with prepare_qat()")
    schedule.detach()
    delattr(model, SCHEDULE_NAME)
    dynamic_lstms = schedule.config.lstm == "dynamic"
    set_observers(model, False)
    model.cpu().eval()
    with quiet(), engine(schedule.config.backend):
        for module in [m for m in model.modules() if isinstance(m, tq.QuantWrapper)]:
            tq.convert(module, inplace=True)
        for name, module in list(model.named_modules()):
            if dynamic_lstms and isinstance(module, nn.LSTM) and int8_of(module, "weight_ih_l0"):
                _replace(model, name, _convert_lstm(module))
                continue
            for tensor in list(getattr(module, "parametrizations", {})):
                fake_quant = int8_of(module, tensor)
                if isinstance(fake_quant, ChannelFakeQuant):
                    store_int8(module, tensor, *fake_quant.int8(original_of(module, tensor)))
    return guard(model, schedule.config.backend)


def _convert_lstm(lstm: nn.LSTM) -> nn.Module:
    weights, biases = {}, {}
    for name in lstm._flat_weights_names:
        if name.startswith("weight_"):
            fake_quant = int8_of(lstm, name)
            assert isinstance(fake_quant, ChannelFakeQuant)
            int8, scale = fake_quant.int8(original_of(lstm, name))
            weights[name] = make_qweight(int8, scale)
        else:
            biases[name] = getattr(lstm, name).detach()
    return dynamic_lstm(lstm, weights, biases)


@torch.no_grad()
def quantize_dynamic(
    model: nn.Module, *, lstm: str = "int8-weights", backend: str = "onednn"
) -> nn.Module:
    """Post-training dynamic int8 of a float model, in place (CPU, eval mode); returns it.

    The layers of the QAT int8 model, quantized without training: Linear layers become
    torch's dynamic int8 Linear (weights per channel, activations quantized per call from
    their own range); the directly read weights and, by default, the LSTM weights are stored
    int8 (per-channel min/max). ``lstm`` and ``backend`` as in ``QATConfig``.
    """
    if schedule_of(model) is not None:
        raise ValueError("a QAT-prepared model converts with convert(), not quantize_dynamic()")
    found = plan(model, lstm=lstm)
    weights = [*found.weights, *(found.lstm_weights(model) if lstm == "int8-weights" else [])]
    qconfig = dynamic_qconfig()
    assert qconfig.weight is not None
    model.cpu().eval()
    with quiet(), engine(backend):
        dynamic = (*found.linears, *(found.lstms if lstm == "dynamic" else ()))
        tq.quantize_dynamic(model, dict.fromkeys(dynamic, qconfig), inplace=True)
        for module_name, tensor, dims in weights:
            module = model.get_submodule(module_name)
            int8, scale = quantize_per_channel(getattr(module, tensor), dims, qconfig.weight())
            store_int8(module, tensor, int8, scale)
    return model


def int8_structure(model: nn.Module, *, mode: str, lstm: str = "int8-weights") -> nn.Module:
    """Give a fresh float TFT the module structure that ``convert`` (mode "qat") or
    ``quantize_dynamic`` (mode "dynamic") produces, with placeholder values, so that an
    exported int8 state loads into it (:func:`foxhunt.quant.serialize.load_int8_tensors`)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: use one of {MODES}")
    found = plan(model, lstm=lstm)
    weights = [*found.weights, *(found.lstm_weights(model) if lstm == "int8-weights" else [])]
    model.cpu().eval()
    with quiet(), torch.no_grad():
        for name in found.linears:
            linear = model.get_submodule(name)
            assert isinstance(linear, nn.Linear)
            _replace(model, name, _int8_linear_placeholder(linear, mode))
        for module_name, tensor, dims in weights:
            module = model.get_submodule(module_name)
            weight = getattr(module, tensor)
            scale = torch.ones(channel_shape(weight.shape, dims))
            store_int8(module, tensor, torch.zeros_like(weight, dtype=torch.int8), scale)
        for name in found.lstms if lstm == "dynamic" else ():
            float_lstm = model.get_submodule(name)
            assert isinstance(float_lstm, nn.LSTM)
            qweights, biases = {}, {}
            for w in float_lstm._flat_weights_names:
                value = getattr(float_lstm, w).detach()
                if w.startswith("weight_"):
                    ones = torch.ones(value.shape[0])
                    qweights[w] = make_qweight(torch.zeros_like(value, dtype=torch.int8), ones)
                else:
                    biases[w] = value
            _replace(model, name, dynamic_lstm(float_lstm, qweights, biases))
    return model


def _int8_linear_placeholder(linear: nn.Linear, mode: str) -> nn.Module:
    shape = (linear.in_features, linear.out_features, linear.bias is not None)
    int8 = nnqd.Linear(*shape) if mode == "dynamic" else nnq.Linear(*shape)
    placeholder = torch.zeros(linear.out_features, linear.in_features, dtype=torch.int8)
    bias = None if linear.bias is None else linear.bias.detach()
    int8.set_weight_bias(make_qweight(placeholder, torch.ones(len(placeholder))), bias)
    if mode == "dynamic":
        return int8
    wrapper = tq.QuantWrapper(linear)
    wrapper.quant = nnq.Quantize(1.0, 0, torch.quint8)  # type: ignore[assignment]
    wrapper.module = int8
    wrapper.dequant = nnq.DeQuantize()  # type: ignore[assignment]
    return wrapper.eval()
