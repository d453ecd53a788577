"""Fake quantization with moving-average range observers: foxhunt's own, on ATen ops.

torch.ao's eager ``FakeQuantize`` is deprecated (torch 2.13 warns on every use) and its
successors do not reach the TFT as foxhunt trains it: torchao's QAT quantizes ``nn.Linear``
weights (and dynamic activations) but not static activation grids, and not weights that no
Linear call reads (the per-variable GRNs' stacked weights, the LSTM's gates); PT2E needs an
exported graph, which the fused variable selection op and activation checkpointing are not.
What QAT needs is small: a range observer and ``torch.fake_quantize_per_*_affine`` (ATen
ops, with straight-through gradients, not deprecated). This module is that, computing what
torch.ao's default QAT qconfig computed, bit for bit (``tests/quant/test_fake.py``):

- :class:`ActivationQuant`: per-tensor affine on ``0..quant_max`` (255: 8-bit, 127: the
  7-bit ``reduce_range`` grid), ranges averaged over batches (constant 0.01).
- :class:`WeightQuant`: per-output-channel symmetric int8 (``-128..127``, zero point 0),
  ranges averaged the same way.

Observers update only while ``observing`` is True, a plain attribute that
:class:`~foxhunt.quant.schedule.ObserverSchedule` sets around training passes; the state
(``scale``, ``zero_point``, ``min_val``, ``max_val``) is in the ``state_dict``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

AVERAGING = 0.01  # torch.ao's moving-average constant
_EPS = torch.finfo(torch.float32).eps  # smallest scale, as torch.ao's observers


class FakeQuant(nn.Module):
    """Shared state of a fake quantizer: the grid (``scale``, ``zero_point``) and the observed
    range (``min_val``, ``max_val``), one entry per channel or one for the tensor."""

    quant_min: int
    quant_max: int

    def __init__(self, quant_min: int, quant_max: int, *, per_channel: bool) -> None:
        super().__init__()
        self.quant_min, self.quant_max = quant_min, quant_max
        self.observing = False
        self.register_buffer("scale", torch.tensor([1.0]))
        self.register_buffer("zero_point", torch.tensor([0], dtype=torch.int32))
        # per channel: empty until observed (the channel count comes with the first weight)
        self.register_buffer("min_val", torch.tensor([] if per_channel else float("inf")))
        self.register_buffer("max_val", torch.tensor([] if per_channel else float("-inf")))
        self.scale: Tensor
        self.zero_point: Tensor
        self.min_val: Tensor
        self.max_val: Tensor

    @property
    def observed(self) -> bool:
        """True once a range has been observed (or loaded)."""
        return self.min_val.numel() > 0 and bool(torch.isfinite(self.min_val).all())

    def forward(self, x: Tensor) -> Tensor:
        if self.observing:
            self.observe(x)
        return self.fake_quantize(x)

    @torch.no_grad()
    def observe(self, x: Tensor) -> None:
        """Move the range towards ``x``'s (the first observation sets it) and the grid with it."""
        low, high = self._extrema(x.detach().float())
        if self.observed:
            low = self.min_val + AVERAGING * (low - self.min_val)
            high = self.max_val + AVERAGING * (high - self.max_val)
        self._resize(self.min_val, low.shape)
        self._resize(self.max_val, high.shape)
        self.min_val.copy_(low)
        self.max_val.copy_(high)
        scale, zero_point = self.grid(low, high)
        self._resize(self.scale, scale.shape)
        self._resize(self.zero_point, zero_point.shape)
        self.scale.copy_(scale)
        self.zero_point.copy_(zero_point)

    @staticmethod
    def _resize(buffer: Tensor, shape: torch.Size) -> None:
        # in place, so that DDP's buffer broadcast and the optimizer keep the same tensors
        if buffer.shape != shape:
            buffer.resize_(shape)

    def _extrema(self, x: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def grid(self, low: Tensor, high: Tensor) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def fake_quantize(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _load_from_state_dict(
        self, state_dict: dict[str, Any], prefix: str, *args: Any, **kwargs: Any
    ) -> None:
        # a per-channel grid's shape is known only once observed: adopt the saved one
        for name in ("scale", "zero_point", "min_val", "max_val"):
            saved = state_dict.get(prefix + name)
            if isinstance(saved, Tensor):
                self._resize(getattr(self, name), saved.shape)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return f"quant_min={self.quant_min}, quant_max={self.quant_max}"


class ActivationQuant(FakeQuant):
    """Per-tensor affine uint8 fake quantization of activations, on ``0..quant_max``."""

    def __init__(self, quant_max: int = 255) -> None:
        if quant_max not in (127, 255):
            raise ValueError(f"quant_max={quant_max}: activations are 8-bit (255) or 7-bit (127)")
        super().__init__(0, quant_max, per_channel=False)

    def _extrema(self, x: Tensor) -> tuple[Tensor, Tensor]:
        low, high = torch.aminmax(x)
        return low, high

    def grid(self, low: Tensor, high: Tensor) -> tuple[Tensor, Tensor]:
        low, high = torch.clamp(low, max=0.0), torch.clamp(high, min=0.0)  # 0 on the grid
        scale = torch.clamp((high - low) / float(self.quant_max - self.quant_min), min=_EPS)
        zero_point = self.quant_min - torch.round(low / scale).to(torch.int32)
        zero_point = zero_point.clamp(self.quant_min, self.quant_max)
        return scale.reshape(1), zero_point.reshape(1)

    def fake_quantize(self, x: Tensor) -> Tensor:
        return torch.fake_quantize_per_tensor_affine(
            x, self.scale, self.zero_point, self.quant_min, self.quant_max
        )

    def qparams(self) -> tuple[float, int]:
        """(scale, zero point) of the frozen grid, as Python numbers."""
        return float(self.scale), int(self.zero_point)


class WeightQuant(FakeQuant):
    """Per-channel symmetric int8 fake quantization of a ``[channels, fan_in]`` weight."""

    def __init__(self) -> None:
        super().__init__(-128, 127, per_channel=True)

    def fake_quantize(self, x: Tensor) -> Tensor:
        if not self.observed:  # a grid before anything is quantized on it
            self.observe(x)
        return torch.fake_quantize_per_channel_affine(
            x, self.scale, self.zero_point, 0, self.quant_min, self.quant_max
        )

    def _extrema(self, x: Tensor) -> tuple[Tensor, Tensor]:
        low, high = torch.aminmax(x.flatten(1), dim=1)
        return low, high

    def grid(self, low: Tensor, high: Tensor) -> tuple[Tensor, Tensor]:
        bound = torch.maximum(-torch.clamp(low, max=0.0), torch.clamp(high, min=0.0))
        scale = torch.clamp(bound / (float(self.quant_max - self.quant_min) / 2), min=_EPS)
        return scale, torch.zeros_like(scale, dtype=torch.int32)

    @torch.no_grad()
    def int8(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        """(int8 values, float32 scale per channel) of ``weight`` ``[channels, ...]`` on the
        current grid: ``int8 * scale`` is exactly what :meth:`fake_quantize` returns."""
        quantized = self.fake_quantize(weight)
        scale = self.scale.detach().float()
        shape = (-1,) + (1,) * (weight.dim() - 1)
        return torch.round(quantized / scale.view(shape)).to(torch.int8), scale


def fake_quantizers(model: nn.Module) -> list[FakeQuant]:
    return [m for m in model.modules() if isinstance(m, FakeQuant)]


def set_observers(model: nn.Module, enabled: bool) -> None:
    """Let every fake quantizer of ``model`` update its range on the next calls, or not."""
    for fq in fake_quantizers(model):
        fq.observing = enabled
