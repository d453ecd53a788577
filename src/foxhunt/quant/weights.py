"""Per-channel int8 weights for tensors that no ``nn.Linear`` call reads.

Some of the TFT's weights are not applied by ``F.linear`` of their own module: the stacked
``[n, fan_in, fan_out]`` weights of the per-variable GRNs (``VariableGRNs``, run by a fused
op), the variable selection GRN's input projections (folded with the input embeddings) and
the LSTM's gate weights. They are fake-quantized from outside with a
``torch.nn.utils.parametrize`` parametrization wrapping a
:class:`~foxhunt.quant.fake.WeightQuant` (:class:`ChannelFakeQuant`), so every read of ``module.<name>`` sees the fake-quantized
weight and its gradient flows straight through to the float weight. After ``convert`` they
are stored as int8 plus one float32 scale per channel (:class:`Int8Weight`).

A *channel* is one index of the weight's ``channel_dims``: ``(0,)`` for an ``[out, in]``
weight (one scale per output unit), ``(0, 2)`` for ``[n, fan_in, fan_out]`` (one scale per
variable and output unit).
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from foxhunt.quant.fake import WeightQuant


def to_channels(weight: Tensor, channel_dims: tuple[int, ...]) -> Tensor:
    """[channels, fan_in] view of ``weight``: channel dims first, flattened; the rest after."""
    rest = tuple(d for d in range(weight.dim()) if d not in channel_dims)
    channels = math.prod(weight.shape[d] for d in channel_dims)
    return weight.permute(*channel_dims, *rest).reshape(channels, -1)


def from_channels(flat: Tensor, channel_dims: tuple[int, ...], shape: torch.Size) -> Tensor:
    """Inverse of :func:`to_channels` for a weight of ``shape``."""
    rest = tuple(d for d in range(len(shape)) if d not in channel_dims)
    order = (*channel_dims, *rest)
    permuted = flat.reshape([shape[d] for d in order])
    return permuted.permute(*[order.index(d) for d in range(len(shape))])


def channel_shape(shape: torch.Size, channel_dims: tuple[int, ...]) -> list[int]:
    """Shape of a per-channel scale that broadcasts against a weight of ``shape``."""
    return [shape[d] if d in channel_dims else 1 for d in range(len(shape))]


class ChannelFakeQuant(nn.Module):
    """Parametrization: int8 fake quantization of a weight, one scale per channel.

    ``fake_quant`` (a :class:`WeightQuant`) sees the weight as ``[channels, fan_in]``. Its
    observer updates at most once per forward pass of the model: a weight read twice in one pass (``VariableGRNs`` and
    ``nn.LSTM`` both do) is quantized on the same grid both times, and the
    :class:`~foxhunt.quant.schedule.ObserverSchedule` re-enables it before the next pass.
    """

    def __init__(self, channel_dims: tuple[int, ...]) -> None:
        super().__init__()
        if tuple(sorted(channel_dims)) != tuple(channel_dims):
            raise ValueError(f"channel_dims must be increasing, got {channel_dims}")
        self.channel_dims = tuple(channel_dims)
        self.fake_quant = WeightQuant()

    def forward(self, weight: Tensor) -> Tensor:
        flat = self.fake_quant(to_channels(weight, self.channel_dims))
        self.fake_quant.observing = False  # one observation per forward pass
        return from_channels(flat, self.channel_dims, weight.shape)

    @torch.no_grad()
    def int8(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        """(int8 values in ``weight``'s layout, float32 scale that broadcasts to it) of the
        fake-quantized ``weight``, on the current grid: ``int8 * scale`` equals it exactly."""
        int8, scale = self.fake_quant.int8(to_channels(weight, self.channel_dims))
        shape = channel_shape(weight.shape, self.channel_dims)
        return from_channels(int8, self.channel_dims, weight.shape), scale.reshape(shape)


class Int8Weight(nn.Module):
    """Parametrization of a converted weight: stored as int8 values and a float32 scale per
    channel (``original0``, ``original1``), read as ``int8 * scale`` (float32)."""

    def __init__(self, int8: Tensor, scale: Tensor) -> None:
        super().__init__()
        self._pending: tuple[Tensor, Tensor] | None = (int8, scale)  # consumed on registration

    def forward(self, int8: Tensor, scale: Tensor) -> Tensor:
        return int8.to(scale.dtype) * scale

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        if self._pending is None:
            raise RuntimeError("an Int8Weight is registered once; assign int8 and scale instead")
        pending, self._pending = self._pending, None
        if pending[0].shape != weight.shape:
            raise ValueError(f"int8 shape {list(pending[0].shape)} != {list(weight.shape)}")
        return pending


def store_int8(module: nn.Module, name: str, int8: Tensor, scale: Tensor) -> None:
    """Replace ``module.<name>`` (plain or fake-quant parametrized) by an :class:`Int8Weight`."""
    if parametrize.is_parametrized(module, name):
        _own_class(module)
        parametrize.remove_parametrizations(module, name, leave_parametrized=False)
    getattr(module, name).requires_grad_(False)
    parametrize.register_parametrization(module, name, Int8Weight(int8, scale), unsafe=True)


def dequantize_stored(model: nn.Module) -> int:
    """Replace every :class:`Int8Weight` of ``model`` by the float32 weight it reads as, in
    place; returns how many. For inference from an int8 file: these weights are computed in
    float32 anyway, and dequantizing ~20 of them through parametrizations on every pass
    costs more than the layers that read them at one window."""
    found = [
        (module, name)
        for module in model.modules()
        for name in list(getattr(module, "parametrizations", {}))
        if isinstance(int8_of(module, name), Int8Weight)
    ]
    for module, name in found:
        _own_class(module)
        parametrize.remove_parametrizations(module, name, leave_parametrized=True)
        getattr(module, name).requires_grad_(False)
    return len(found)


def original_of(module: nn.Module, name: str) -> Tensor:
    """The float tensor a parametrization of ``module.<name>`` reads."""
    return cast(Tensor, module.parametrizations[name].original)  # type: ignore[index,union-attr]


def _own_class(module: nn.Module) -> None:
    """Give a parametrized module a class of its own before removing a parametrization.

    ``remove_parametrizations`` deletes the property from ``type(module)``, which a
    ``copy.deepcopy`` of the module shares (torch 2.13): converting a copy would break the
    original. A private copy of the class keeps every other instance intact.
    """
    cls = type(module)
    module.__class__ = type(cls.__name__, cls.__bases__, dict(cls.__dict__))


def int8_of(module: nn.Module, name: str) -> ChannelFakeQuant | Int8Weight | None:
    """The quantization parametrization of ``module.<name>``, if any."""
    if not parametrize.is_parametrized(module, name):
        return None
    found = module.parametrizations[name][0]  # type: ignore[index]
    return found if isinstance(found, ChannelFakeQuant | Int8Weight) else None


def quantize_per_channel(weight: Tensor, channel_dims: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    """Post-training: (int8, scale) of ``weight``, symmetric per channel from its own range."""
    quant = ChannelFakeQuant(channel_dims)
    with torch.no_grad():
        flat = to_channels(weight.detach().float(), channel_dims)
        quant.fake_quant.observe(flat)
        return quant.int8(weight.detach().float())
