"""Interpretable multi-head attention (section 4.4, eqs. 13-16).

Each head has its own query and key projections; all heads share one value projection, so
averaging the heads' outputs equals attending with the heads' averaged weights:
mean_h(A_h V W_V) = (mean_h A_h) V W_V. That average is the interpretable attention pattern.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def decoder_causal_mask(lookback: int, horizon: int, device: torch.device | None = None) -> Tensor:
    """[H, L + H] bool, True where decoder query i (position L + i) may attend: keys <= L + i."""
    return torch.ones(horizon, lookback + horizon, dtype=torch.bool, device=device).tril(lookback)


class InterpretableMultiHeadAttention(nn.Module):
    """forward(query [B, Tq, d], key [B, Tk, d], value [B, Tk, d], mask [Tq, Tk] bool,
    need_weights) -> (out [B, Tq, d], head-averaged weights [B, Tq, Tk] or None)."""

    def __init__(self, hidden_size: int, num_heads: int) -> None:
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size={hidden_size} is not divisible by num_heads={num_heads}")
        self.num_heads, self.head_size = num_heads, hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)  # num_heads per-head W_Q, side by side
        self.key = nn.Linear(hidden_size, hidden_size)  # num_heads per-head W_K
        self.value = nn.Linear(hidden_size, self.head_size)  # W_V, shared by all heads
        self.out = nn.Linear(self.head_size, hidden_size)  # W_H

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        b, tq, tk, nh, dh = (
            query.shape[0],
            query.shape[1],
            key.shape[1],
            self.num_heads,
            self.head_size,
        )
        q = self.query(query).view(b, tq, nh, dh).transpose(1, 2)  # [B, nh, Tq, dh]
        k = self.key(key).view(b, tk, nh, dh).transpose(1, 2)  # [B, nh, Tk, dh]
        v = self.value(value).unsqueeze(1)  # [B, 1, Tk, dh], the same for every head
        if need_weights:
            scores = q @ k.transpose(-2, -1) / math.sqrt(dh)  # [B, nh, Tq, Tk]
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
            weights = torch.softmax(scores, dim=-1).mean(dim=1)  # [B, Tq, Tk], eq. 15
            heads = weights.to(v.dtype) @ v.squeeze(1)  # [B, Tq, dh]: H~, eq. 14
        else:
            v = v.expand(b, nh, tk, dh)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).mean(dim=1)
            weights = None
        return self.out(heads), weights  # [B, Tq, d], eq. 13
