"""Variable selection network, eqs. 6-8 of the paper.

Each input variable j is embedded into xi_j (a real x_j as x_j * w_j + b_j, a categorical
through an nn.Embedding), the selection weights are v = softmax(GRN_v(flatten(xi), c_s)), each
xi_j goes through its own GRN, and the output is sum_j v_j * GRN_j(xi_j).

Everything up to the first nonlinearity is linear in x_j, so for real variables the
embedding is folded into the layers that read it: GRN_v's input projections become one
[rows, n] @ [n, hidden] matmul and each per-variable GRN starts from the affine map
x_j * A_j + c_j. No [rows, n, d_var] embedding is ever built for real inputs. The per-variable
GRNs run as one fused op (variable_grns.py, fused_grns.py); reference.py keeps the plain
version.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt.model.layers import GatedResidualNetwork
from foxhunt.model.variable_grns import VariableGRNs


class VariableSelectionNetwork(nn.Module):
    """Select among ``num_real`` real and ``len(cardinalities)`` categorical variables.

    forward(real [..., n_real], categorical [..., n_cat] int64, context [B, c])
    -> (output [..., hidden], weights [..., n_real + n_cat]); ``...`` is (B,) or (B, T).
    """

    def __init__(
        self,
        num_real: int,
        cardinalities: tuple[int, ...] = (),
        *,
        variable_size: int,
        hidden_size: int,
        dropout: float,
        context_size: int | None = None,
    ) -> None:
        super().__init__()
        self.num_real, self.num_categorical = num_real, len(cardinalities)
        n, d = num_real + len(cardinalities), variable_size
        if n == 0:
            raise ValueError("a VariableSelectionNetwork needs at least one variable")
        self.variable_size, self.hidden_size = d, hidden_size
        # real variable j: xi_j = x_j * real_weight[j] + real_bias[j] (nn.Linear(1, d) init)
        self.real_weight = nn.Parameter(torch.empty(num_real, d).uniform_(-1.0, 1.0))
        self.real_bias = nn.Parameter(torch.empty(num_real, d).uniform_(-1.0, 1.0))
        self.embeddings = nn.ModuleList(nn.Embedding(c, d) for c in cardinalities)
        self.selection = GatedResidualNetwork(n * d, hidden_size, n, dropout, context_size)
        g = min(d, hidden_size)
        self.real_grns = VariableGRNs(num_real, d, g, hidden_size, dropout) if num_real else None
        self.categorical_grns = (
            VariableGRNs(len(cardinalities), d, g, hidden_size, dropout) if cardinalities else None
        )

    def forward(
        self, real: Tensor, categorical: Tensor | None = None, context: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        lead = real.shape[:-1]  # (B,) or (B, T)
        rows = math.prod(lead)
        x = real.reshape(rows, self.num_real)  # [R, n_real]
        cat = self._embed_categorical(categorical, rows)  # [R, n_cat, d] or None
        # eq. 6: v = softmax(GRN_v(flatten(xi), c_s)); fc1 and skip folded with the embeddings
        hidden = self._flat_linear(self.selection.fc1, x, cat)  # [R, hidden]
        skip_layer = self.selection.skip
        skip = self._flat_linear(skip_layer, x, cat) if skip_layer else self._flat(x, cat)
        if context is not None and len(lead) == 2:
            context = context.unsqueeze(1)  # [B, 1, c]: the same context at every step
        hidden, skip = hidden.view(*lead, -1), skip.view(*lead, -1)
        weights = torch.softmax(self.selection.forward_projected(hidden, skip, context), dim=-1)
        # eqs. 7-8: sum_j v_j * GRN_j(xi_j), real and categorical variables apart
        flat_weights = weights.reshape(rows, -1)  # [R, n]
        out = x.new_zeros(rows, self.hidden_size)
        if self.real_grns is not None:
            z = torch.stack([x.t(), torch.ones_like(x.t())], dim=-1)  # [n_real, R, 2]: [x, 1]
            real_weights = flat_weights[:, : self.num_real]
            out = out + self.real_grns(z, self._real_input_weight(), real_weights)
        if self.categorical_grns is not None and cat is not None:
            z = F.pad(cat.transpose(0, 1), (0, 1), value=1.0)  # [n_cat, R, d + 1]: [xi, 1]
            cat_weights = flat_weights[:, self.num_real :]
            out = out + self.categorical_grns(z, self.categorical_grns.input_weight(), cat_weights)
        return out.view(*lead, self.hidden_size), weights

    def _embed_categorical(self, categorical: Tensor | None, rows: int) -> Tensor | None:
        if not self.num_categorical:
            return None
        if categorical is None:
            raise ValueError(f"expected {self.num_categorical} categorical inputs, got None")
        codes = categorical.reshape(rows, self.num_categorical)
        return torch.stack([emb(codes[:, j]) for j, emb in enumerate(self.embeddings)], dim=1)

    def _real_input_weight(self) -> Tensor:
        """[n_real, 2, g + 1 + hidden]: [x, 1] -> [fc1(xi) | 1 | skip(xi)], xi = x * w + b."""
        assert self.real_grns is not None
        embed = torch.stack([self.real_weight, self.real_bias], dim=1)  # [n, 2, d]: rows w, b
        embed = F.pad(embed, (0, 1))  # [n, 2, d + 1]; a 1 in the corner passes [x, 1]'s 1 on
        embed = embed + F.pad(embed.new_ones(1, 1, 1), (embed.shape[-1] - 1, 0, 1, 0))
        with torch.autocast(embed.device.type, enabled=False):  # weights: full precision
            return torch.bmm(embed, self.real_grns.input_weight())

    def _flat_linear(self, layer: nn.Linear, x: Tensor, cat: Tensor | None) -> Tensor:
        """layer(flatten(xi)) without building xi for the real variables."""
        nr, d = self.num_real, self.variable_size
        weight = layer.weight.view(layer.out_features, -1, d)  # [out, n, d]
        real_w = weight[:, :nr]  # [out, n_real, d]
        slope = torch.einsum("ojd,jd->jo", real_w, self.real_weight)  # [n_real, out]
        bias = torch.einsum("ojd,jd->o", real_w, self.real_bias) + layer.bias
        out = torch.addmm(bias, x, slope)  # [R, out]
        if cat is not None:
            out = out + cat.flatten(1) @ weight[:, nr:].flatten(1).t()
        return out

    def _flat(self, x: Tensor, cat: Tensor | None) -> Tensor:
        """flatten(xi) itself: the identity skip when n * d == n (variable_size 1)."""
        parts = [torch.addcmul(self.real_bias[:, 0], x, self.real_weight[:, 0])]
        if cat is not None:
            parts.append(cat.flatten(1))
        return torch.cat(parts, dim=-1)


class LearnedInput(nn.Module):
    """Stands in for a selection network with no variables: a learned embedding.

    Used for the static inputs when a model has none (the static contexts still exist) and
    for the decoder when there are no known future inputs. Starts at zero, so at
    initialization the model sees a zero input; it is a parameter so the model can learn
    a better constant. forward(x [B, *shape, 0], ...) -> (embedding [B, *shape, hidden],
    weights [B, *shape, 0]).
    """

    def __init__(self, shape: tuple[int, ...], hidden_size: int) -> None:
        super().__init__()
        self.embedding = nn.Parameter(torch.zeros(*shape, hidden_size))

    def forward(
        self, x: Tensor, categorical: Tensor | None = None, context: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        del categorical, context  # same contract as VariableSelectionNetwork; nothing to read
        batch = x.shape[0]
        out = self.embedding.expand(batch, *self.embedding.shape)
        return out.to(x.dtype), x.new_zeros(*x.shape[:-1], 0)
