"""Sequence-to-sequence layer (section 4.5.1): LSTM encoder over the lookback, decoder over
the horizon. Each is its own module so that activation checkpointing can wrap it."""

from __future__ import annotations

import torch
from torch import Tensor, nn


class StackedLSTM(nn.Module):
    """nn.LSTM layers (batch_first) with dropout between layers, outside the nn.LSTMs.

    Each layer is a one-layer nn.LSTM (dropout=0) so the inter-layer dropout is an
    nn.Dropout module: it follows train/eval and the RNG state that checkpointing restores.
    With one layer there is no dropout here; the post-LSTM gate drops its input.
    forward(x [B, T, in], (h0, c0) each [layers, B, hidden]) -> (out [B, T, hidden], (h, c)).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropout: float):
        super().__init__()
        sizes = [input_size] + [hidden_size] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.LSTM(s, hidden_size, batch_first=True) for s in sizes)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, state: tuple[Tensor, Tensor]
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        h0, c0 = state  # [layers, B, hidden]
        hs, cs = [], []
        for i, lstm in enumerate(self.layers):
            if i > 0:
                x = self.dropout(x)
            x, (h, c) = lstm(x, (h0[i : i + 1], c0[i : i + 1]))  # x [B, T, hidden]
            hs.append(h)
            cs.append(c)
        return x, (torch.cat(hs), torch.cat(cs))  # [layers, B, hidden] each


class LSTMEncoder(StackedLSTM):
    """Encodes the selected past inputs; initial state (c_h, c_c) from the static encoders."""


class LSTMDecoder(StackedLSTM):
    """Continues from the encoder's final state over the selected known future inputs."""
