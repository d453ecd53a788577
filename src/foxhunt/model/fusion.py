"""Temporal fusion decoder (section 4.5): enrichment, self-attention, position-wise GRN."""

from __future__ import annotations

from torch import Tensor, nn

from foxhunt.model.attention import InterpretableMultiHeadAttention, decoder_causal_mask
from foxhunt.model.layers import GateAddNorm, GatedResidualNetwork


class TemporalFusionDecoder(nn.Module):
    """forward(temporal [B, L + H, d], c_enrichment [B, d], need_weights)
    -> (psi~ [B, H, d], attention [B, H, L + H] or None).

    ``temporal`` is the post-LSTM gate output over all positions; queries are the H decoder
    positions, keys and values all L + H positions under the causal mask.
    """

    def __init__(
        self, hidden_size: int, num_heads: int, dropout: float, lookback: int, horizon: int
    ):
        super().__init__()
        h = hidden_size
        self.lookback, self.horizon = lookback, horizon
        self.enrichment = GatedResidualNetwork(h, h, h, dropout, context_size=h)  # eq. 18
        self.attention = InterpretableMultiHeadAttention(h, num_heads)  # eq. 19
        self.attention_gate = GateAddNorm(h, h, dropout)  # eq. 20
        self.positionwise = GatedResidualNetwork(h, h, h, dropout)  # eq. 21
        # eq. 22 skips over the whole fusion decoder; no dropout here, as in the paper's code
        self.output_gate = GateAddNorm(h, h, dropout=0.0)
        self.register_buffer("mask", decoder_causal_mask(lookback, horizon), persistent=False)
        self.mask: Tensor

    def forward(
        self, temporal: Tensor, c_enrichment: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        theta = self.enrichment(temporal, c_enrichment.unsqueeze(1))  # [B, L + H, d]
        query = theta[:, self.lookback :]  # [B, H, d]: the decoder positions
        attended, weights = self.attention(query, theta, theta, self.mask, need_weights)
        delta = self.attention_gate(attended, query)  # [B, H, d]
        psi = self.positionwise(delta)  # [B, H, d]
        return self.output_gate(psi, temporal[:, self.lookback :]), weights  # eq. 22
