"""A plain, per-variable variable selection network: the readable reference.

One nn.Linear(1, d) per real variable, one nn.Embedding per categorical, one ordinary
GatedResidualNetwork per variable in a ModuleList, a Python loop. Slow (220 small GRNs per
step) but obviously eqs. 6-8; tests check the fused VariableSelectionNetwork against it.
``copy_reference_to_fast`` / ``copy_fast_to_reference`` move weights between the two.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from foxhunt.model.layers import GatedResidualNetwork
from foxhunt.model.variable_grns import VariableGRNs
from foxhunt.model.variable_selection import VariableSelectionNetwork


class ReferenceVariableSelectionNetwork(nn.Module):
    """Same constructor and forward contract as VariableSelectionNetwork."""

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
        n, d = num_real + len(cardinalities), variable_size
        self.real_embeddings = nn.ModuleList(nn.Linear(1, d) for _ in range(num_real))
        self.embeddings = nn.ModuleList(nn.Embedding(c, d) for c in cardinalities)
        self.selection = GatedResidualNetwork(n * d, hidden_size, n, dropout, context_size)
        g = min(d, hidden_size)
        self.grns = nn.ModuleList(
            GatedResidualNetwork(d, g, hidden_size, dropout) for _ in range(n)
        )

    def forward(
        self, real: Tensor, categorical: Tensor | None = None, context: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        xi = [emb(real[..., j : j + 1]) for j, emb in enumerate(self.real_embeddings)]
        if self.embeddings:
            assert categorical is not None
            xi += [emb(categorical[..., j]) for j, emb in enumerate(self.embeddings)]
        if context is not None and real.dim() == 3:
            context = context.unsqueeze(1)  # [B, 1, c]
        flat = torch.cat(xi, dim=-1)  # [..., n * d]
        weights = torch.softmax(self.selection(flat, context), dim=-1)  # [..., n]
        processed = torch.stack([grn(x) for grn, x in zip(self.grns, xi, strict=True)], dim=-1)
        return (processed * weights.unsqueeze(-2)).sum(-1), weights  # [..., hidden], [..., n]


@torch.no_grad()
def copy_reference_to_fast(
    ref: ReferenceVariableSelectionNetwork, fast: VariableSelectionNetwork
) -> None:
    """Load the reference network's weights into the fused one (same sizes)."""
    for fast_t, ref_t in _links(fast, ref):
        fast_t.copy_(ref_t)


@torch.no_grad()
def copy_fast_to_reference(
    fast: VariableSelectionNetwork, ref: ReferenceVariableSelectionNetwork
) -> None:
    """Load the fused network's weights into the reference (same sizes)."""
    for fast_t, ref_t in _links(fast, ref):
        ref_t.copy_(fast_t)


def _links(
    fast: VariableSelectionNetwork, ref: ReferenceVariableSelectionNetwork
) -> list[tuple[Tensor, Tensor]]:
    """(fast view, reference view) of every parameter: the two layouts side by side."""
    links: list[tuple[Tensor, Tensor]] = []
    for j, emb in enumerate(ref.real_embeddings):
        assert isinstance(emb, nn.Linear)
        links += [(fast.real_weight[j], emb.weight[:, 0]), (fast.real_bias[j], emb.bias)]
    for module_f, module_r in [
        *zip(fast.embeddings, ref.embeddings, strict=True),
        (fast.selection, ref.selection),
    ]:
        links += list(zip(module_f.parameters(), module_r.parameters(), strict=True))
    stacks = [(fast.real_grns, 0), (fast.categorical_grns, fast.num_real)]
    for stack, offset in stacks:
        for j in range(0 if stack is None else stack.n):
            assert stack is not None
            grn = ref.grns[offset + j]
            assert isinstance(grn, GatedResidualNetwork)
            links += _grn_links(stack, j, grn)
    return links


def _grn_links(
    stack: VariableGRNs, j: int, grn: GatedResidualNetwork
) -> list[tuple[Tensor, Tensor]]:
    """Variable j of the stacked GRNs next to an ordinary GRN (nn.Linear weights transposed)."""
    links = [
        (stack.fc1_weight[j], grn.fc1.weight.t()),
        (stack.fc1_bias[j], grn.fc1.bias),
        (stack.fc2_weight[j], grn.fc2.weight.t()),
        (stack.fc2_bias[j], grn.fc2.bias),
        (stack.glu_weight[j], grn.gate_norm.glu.proj.weight.t()),
        (stack.glu_bias[j], grn.gate_norm.glu.proj.bias),
        (stack.norm_weight[j], grn.gate_norm.add_norm.norm.weight),
        (stack.norm_bias[j], grn.gate_norm.add_norm.norm.bias),
    ]
    if stack.has_skip:
        assert grn.skip is not None
        links += [(stack.skip_weight[j], grn.skip.weight.t()), (stack.skip_bias[j], grn.skip.bias)]
    return links
