"""Dropout whose mask costs a quarter of the random draws of ``nn.Dropout``'s.

On CPU, ``bernoulli_`` calls the generator once per element: dropping out the per-variable
GRNs of a 220-variable selection network (7M activations per step) took ~110 ms of a
training step. Here each 64-bit draw gives four 16-bit uniforms. The keep probability is
rounded to a multiple of 2^-16 and the rescaling uses that exact probability, so the mask
still has mean 1. It is an ``nn.Dropout``: ``p``, ``train()``/``eval()`` and the global RNG
(seeding, checkpoint RNG replay) behave the same.

A fused op can instead take a :class:`HashedMask`: one seed drawn from the global RNG, each
element's bit a hash of the seed and the element's index. The op (grn_cells.cpp) computes
the bits where it needs them, in forward and again in backward, and the 7M-element mask of a
220-variable VSN is neither drawn (a sixth of the fused op's time) nor kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

_LEVELS = 1 << 16
_LOW32 = 0xFFFFFFFF
KEEP_ALL = _LEVELS
"""A keep threshold that keeps every element."""


@dataclass(frozen=True)
class HashedMask:
    """Keep element i (row-major) when the top 16 bits of
    fmix32(fmix32(i + seed_lo) ^ seed_hi) are below ``threshold`` (MurmurHash3's finalizer,
    32-bit arithmetic; grn_cells.cpp computes the same). Indices wrap at 2^32 elements."""

    seed: int | Tensor
    """64 bits from the global RNG (an int64 tensor of one element, or an int)."""
    threshold: int
    """The keep probability times 2^16; 2^16 keeps everything."""

    def keep(self, index: Tensor) -> Tensor:
        """Bool tensor: whether each element of ``index`` (int64 flat indices) is kept."""
        x = _fmix32((index + (self.seed & _LOW32)) & _LOW32) ^ ((self.seed >> 32) & _LOW32)
        return (_fmix32(x) >> 16) < self.threshold


def _fmix32(x: Tensor) -> Tensor:
    """MurmurHash3's 32-bit finalizer on int64 holding 32-bit values (products wrap in int64;
    their low 32 bits are exact)."""
    x = x ^ (x >> 16)
    x = (x * 0x85EBCA6B) & _LOW32
    x = x ^ (x >> 13)
    x = (x * 0xC2B2AE35) & _LOW32
    return x ^ (x >> 16)


class FastDropout(nn.Dropout):
    """nn.Dropout with a cheaper mask; ``keep_mask`` exposes the mask for fused ops."""

    @property
    def keep_probability(self) -> float:
        """1 - p, rounded to a multiple of 2^-16 (exactly what ``keep_mask`` draws)."""
        return round((1.0 - self.p) * _LEVELS) / _LEVELS

    @property
    def keep_threshold(self) -> int:
        """``keep_probability`` times 2^16: an element is kept when its 16 random bits are
        below it."""
        return round(self.keep_probability * _LEVELS)

    def keep_mask(self, shape: tuple[int, ...], device: torch.device) -> Tensor:
        """Bool tensor of ``shape``, True with probability ``keep_probability``."""
        n = math.prod(shape)
        words = torch.empty((n + 3) // 4, dtype=torch.int64, device=device)
        words.random_(-(1 << 63), (1 << 63) - 1)  # 64 random bits each
        draws = words.view(torch.int16)[:n].view(shape)  # uniform on [-2^15, 2^15)
        return draws < self.keep_threshold - (1 << 15)

    def hashed_mask(self, device: torch.device) -> HashedMask:
        """A :class:`HashedMask` with ``keep_probability``, its seed from ``device``'s RNG."""
        # a tensor, not .item(): a compiled step reads no value back into Python
        seed = torch.randint(-(1 << 63), (1 << 63) - 1, (), device=device)
        return HashedMask(seed, self.keep_threshold)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        keep = self.keep_probability
        if keep == 0.0:
            return torch.zeros_like(x)
        return x * self.keep_mask(tuple(x.shape), x.device) / keep
