"""Quantization as transforms of a TFT: ``prepare_qat`` / ``convert``, ``quantize_dynamic``.

The model's files do not know about quantization: these functions swap or parametrize its
layers from outside, in place, and return the model. The fake quantizers are foxhunt's own
(``quant/fake.py``, ATen's fake-quant ops); nothing here uses torch.ao.

=============================  ====================================  ==========================
part                           QAT (``prepare_qat``)                 int8 model (``convert``)
=============================  ====================================  ==========================
Linear layers called as        FakeQuantLinear: weight fake-quant    QuantizedLinear: int8
modules: GRN fc1/context/fc2/  per output channel, input and output  weights, frozen input and
skip, every GLU projection,    activations fake-quantized (observed  output grids (foxhunt's
attention query/key/value/out  per tensor)                           int8 kernel computes it)
LSTM gate weights              ChannelFakeQuant per gate unit        Int8Weight, FP32 kernel
(``QATConfig.lstm``)           (activations: not fake-quantized)
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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn
from torch.nn.utils import parametrize

from foxhunt.model.variable_grns import VariableGRNs
from foxhunt.model.variable_selection import VariableSelectionNetwork
from foxhunt.quant.config import QATConfig
from foxhunt.quant.fake import set_observers
from foxhunt.quant.linear import FakeQuantLinear, QuantizedLinear
from foxhunt.quant.migrate import accept_legacy_state
from foxhunt.quant.schedule import SCHEDULE_NAME, ObserverSchedule, schedule_of
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
    """nn.LSTM layers whose gate weights are int8 (``lstm="int8-weights"``)."""

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


def _swap_linears(
    model: nn.Module, names: tuple[str, ...], make: Callable[[nn.Linear], nn.Module]
) -> None:
    """Replace each ``nn.Linear`` named in ``names`` by ``make(linear)``."""
    for name in names:
        linear = model.get_submodule(name)
        assert isinstance(linear, nn.Linear)
        _replace(model, name, make(linear))


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
    device = _device(model)
    _swap_linears(
        model,
        found.linears,
        lambda linear: FakeQuantLinear(linear, config.activation_max).to(device),
    )
    for module_name, tensor, dims in [*found.weights, *found.lstm_weights(model)]:
        fake_quant = ChannelFakeQuant(dims).to(device)
        parametrize.register_parametrization(model.get_submodule(module_name), tensor, fake_quant)
    _observe_weights(model)
    schedule = ObserverSchedule(config).to(device)
    model.add_module(SCHEDULE_NAME, schedule)
    schedule.attach(model)
    set_observers(model, False)
    accept_legacy_state(model)
    return model


@torch.no_grad()
def _observe_weights(model: nn.Module) -> None:
    """Give every weight quantizer its per-channel grid from the initial weights, so that a
    pass with observers off (evaluation, a paused measurement) before the first training
    step already quantizes on the right grid (and with scales of the right shape)."""
    for module in model.modules():
        if isinstance(module, FakeQuantLinear):
            module.weight_quant.observe(module.linear.weight)
        for tensor in list(getattr(module, "parametrizations", {})):
            fake_quant = int8_of(module, tensor)
            if isinstance(fake_quant, ChannelFakeQuant):
                fake_quant.fake_quant.observing = True
                fake_quant(original_of(module, tensor))  # observes once, then stops


@torch.no_grad()
def convert(model: nn.Module) -> nn.Module:
    """Turn a QAT-prepared model into its int8 model, in place (CPU, eval mode); returns it.

    Uses the frozen grids: the int8 model computes exactly what the fake-quant model computes
    in eval mode (``QuantizedLinear``'s reference forward); foxhunt's int8 kernel
    (``kernel.accelerate``) computes the same with int8 GEMMs, up to float32 rounding.
    """
    schedule = schedule_of(model)
    if schedule is None:
        raise ValueError("convert() needs a model prepared with prepare_qat()")
    schedule.detach()
    delattr(model, SCHEDULE_NAME)
    set_observers(model, False)
    model.cpu().eval()
    for name, module in list(model.named_modules()):
        if isinstance(module, FakeQuantLinear):
            _replace(model, name, QuantizedLinear.from_fake_quant(module))
            continue
        for tensor in list(getattr(module, "parametrizations", {})):
            fake_quant = int8_of(module, tensor)
            if isinstance(fake_quant, ChannelFakeQuant):
                store_int8(module, tensor, *fake_quant.int8(original_of(module, tensor)))
    return model


@torch.no_grad()
def quantize_dynamic(model: nn.Module, *, lstm: str = "int8-weights") -> nn.Module:
    """Post-training dynamic int8 of a float model, in place (CPU, eval mode); returns it.

    The layers of the QAT int8 model, quantized without training: Linear layers become
    dynamic ``QuantizedLinear`` layers (weights per channel from their own range, inputs on a
    7-bit grid chosen per call from their own range); the directly read weights and, by
    default, the LSTM weights are stored int8 (per-channel min/max). ``lstm`` as QATConfig's.
    """
    if schedule_of(model) is not None:
        raise ValueError("a QAT-prepared model converts with convert(), not quantize_dynamic()")
    found = plan(model, lstm=lstm)
    model.cpu().eval()
    _swap_linears(model, found.linears, QuantizedLinear.dynamic)
    for module_name, tensor, dims in [*found.weights, *found.lstm_weights(model)]:
        module = model.get_submodule(module_name)
        store_int8(module, tensor, *quantize_per_channel(getattr(module, tensor), dims))
    return model


def int8_structure(
    model: nn.Module, *, mode: str, lstm: str = "int8-weights", activation_max: int = 255
) -> nn.Module:
    """Give a fresh float TFT the module structure that ``convert`` (mode "qat") or
    ``quantize_dynamic`` (mode "dynamic") produces, with placeholder values, so that an
    exported int8 state loads into it (:func:`foxhunt.quant.serialize.load_int8_tensors`)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: use one of {MODES}")
    found = plan(model, lstm=lstm)
    model.cpu().eval()
    with torch.no_grad():
        _swap_linears(
            model,
            found.linears,
            lambda linear: QuantizedLinear(
                linear.in_features,
                linear.out_features,
                bias=linear.bias is not None,
                static=mode == "qat",
                activation_max=activation_max,
            ),
        )
        for module_name, tensor, dims in [*found.weights, *found.lstm_weights(model)]:
            module = model.get_submodule(module_name)
            weight = getattr(module, tensor)
            scale = torch.ones(channel_shape(weight.shape, dims))
            store_int8(module, tensor, torch.zeros_like(weight, dtype=torch.int8), scale)
    return model
