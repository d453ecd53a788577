"""Static covariate encoders (section 4.3): four contexts from the static embedding."""

from __future__ import annotations

from torch import Tensor, nn

from foxhunt.model.layers import GatedResidualNetwork


class StaticCovariateEncoders(nn.Module):
    """c_s (variable selection), c_e (enrichment), c_h and c_c (LSTM initial state).

    forward(static_embedding [B, hidden]) -> four [B, hidden] contexts, each from its own GRN.
    """

    def __init__(self, hidden_size: int, dropout: float) -> None:
        super().__init__()
        h = hidden_size
        self.selection = GatedResidualNetwork(h, h, h, dropout)
        self.enrichment = GatedResidualNetwork(h, h, h, dropout)
        self.state_h = GatedResidualNetwork(h, h, h, dropout)
        self.state_c = GatedResidualNetwork(h, h, h, dropout)

    def forward(self, static_embedding: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        zeta = static_embedding  # [B, hidden]
        return (
            self.selection(zeta),  # c_s
            self.enrichment(zeta),  # c_e
            self.state_h(zeta),  # c_h
            self.state_c(zeta),  # c_c
        )
