"""The gating building blocks of the TFT (Lim et al. 2021, section 4.1).

GLU (eq. 5), GateAddNorm (the ``LayerNorm(a + GLU(.))`` that closes every gate) and the
Gated Residual Network (eqs. 2-4). Dropout sits where the paper puts it: on the input of
each gating layer (``eta_1`` in eq. 3 for the GRN), before the gate and the layer norm.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class GatedLinearUnit(nn.Module):
    """GLU(x) = sigmoid(W_4 x + b_4) * (W_5 x + b_5), eq. 5, as one Linear to 2 * output."""

    def __init__(self, input_size: int, output_size: int) -> None:
        super().__init__()
        self.proj = nn.Linear(input_size, 2 * output_size)

    def forward(self, x: Tensor) -> Tensor:
        # (..., input) -> (..., 2 * output) -> (..., output); first half values, second gates
        return F.glu(self.proj(x), dim=-1)


class AddNorm(nn.Module):
    """LayerNorm(x + skip)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(size)

    def forward(self, x: Tensor, skip: Tensor) -> Tensor:
        return self.norm(x + skip)


class GateAddNorm(nn.Module):
    """LayerNorm(skip + GLU(dropout(x))): the gate that closes every TFT block.

    Dropout is applied to the gate's input, as in the paper (section 4.1, "we apply dropout
    before the gating layer and layer normalization") and in its reference code.
    """

    def __init__(self, input_size: int, output_size: int, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.glu = GatedLinearUnit(input_size, output_size)
        self.add_norm = AddNorm(output_size)

    def forward(self, x: Tensor, skip: Tensor) -> Tensor:
        # x (..., input), skip (..., output) -> (..., output)
        return self.add_norm(self.glu(self.dropout(x)), skip)


class GatedResidualNetwork(nn.Module):
    """GRN(a, c) = LayerNorm(skip(a) + GLU(eta_1)), eqs. 2-4.

    eta_2 = ELU(W_2 a + W_3 c + b_2); eta_1 = W_1 eta_2 + b_1 (dropout on eta_1 is the
    GateAddNorm's). ``skip`` is a Linear when input and output sizes differ, else identity.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        output_size: int,
        dropout: float,
        context_size: int | None = None,
    ) -> None:
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)  # W_2, b_2
        self.context = (
            nn.Linear(context_size, hidden_size, bias=False) if context_size else None
        )  # W_3
        self.fc2 = nn.Linear(hidden_size, hidden_size)  # W_1, b_1
        self.gate_norm = GateAddNorm(hidden_size, output_size, dropout)
        self.skip = nn.Linear(input_size, output_size) if input_size != output_size else None

    def forward(self, a: Tensor, context: Tensor | None = None) -> Tensor:
        # a (..., input), context broadcastable to (..., context) -> (..., output)
        skip = a if self.skip is None else self.skip(a)
        return self.forward_projected(self.fc1(a), skip, context)

    def forward_projected(self, hidden: Tensor, skip: Tensor, context: Tensor | None) -> Tensor:
        """The GRN after its input projections: ``hidden = fc1(a)``, ``skip = skip(a)``.

        For callers that compute both projections more cheaply themselves (the variable
        selection network folds them into its input embedding).
        """
        if self.context is not None:
            if context is None:
                raise ValueError("this GatedResidualNetwork was built with a context; pass one")
            hidden = hidden + self.context(context)  # (..., hidden)
        eta1 = self.fc2(F.elu(hidden))  # (..., hidden)
        return self.gate_norm(eta1, skip)  # (..., output)
