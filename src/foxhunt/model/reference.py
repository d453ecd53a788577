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


def _grn_pairs(fast: VariableSelectionNetwork) -> list[tuple[VariableGRNs, int, int]]:
    """(stacked GRNs, index inside them, index in the reference) for every variable."""
    pairs = []
    if fast.real_grns is not None:
        pairs += [(fast.real_grns, j, j) for j in range(fast.num_real)]
    if fast.categorical_grns is not None:
        pairs += [
            (fast.categorical_grns, j, fast.num_real + j) for j in range(fast.num_categorical)
        ]
    return pairs


def _copy_grn(stack: VariableGRNs, j: int, grn: GatedResidualNetwork, to_fast: bool) -> None:
    links: list[tuple[Tensor, Tensor]] = [
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
    for fast_view, ref_view in links:
        dst, src = (fast_view, ref_view) if to_fast else (ref_view, fast_view)
        dst.copy_(src)


@torch.no_grad()
def copy_reference_to_fast(
    ref: ReferenceVariableSelectionNetwork, fast: VariableSelectionNetwork
) -> None:
    """Load the reference network's weights into the fused one (same sizes)."""
    _copy(ref, fast, to_fast=True)


@torch.no_grad()
def copy_fast_to_reference(
    fast: VariableSelectionNetwork, ref: ReferenceVariableSelectionNetwork
) -> None:
    """Load the fused network's weights into the reference (same sizes)."""
    _copy(ref, fast, to_fast=False)


def _copy(
    ref: ReferenceVariableSelectionNetwork, fast: VariableSelectionNetwork, to_fast: bool
) -> None:
    for j, emb in enumerate(ref.real_embeddings):
        assert isinstance(emb, nn.Linear)
        for fast_t, ref_t in (
            (fast.real_weight[j], emb.weight[:, 0]),
            (fast.real_bias[j], emb.bias),
        ):
            (fast_t if to_fast else ref_t).copy_(ref_t if to_fast else fast_t)
    for fast_emb, ref_emb in zip(fast.embeddings, ref.embeddings, strict=True):
        (fast_emb if to_fast else ref_emb).load_state_dict(
            (ref_emb if to_fast else fast_emb).state_dict()
        )
    dst, src = (fast.selection, ref.selection) if to_fast else (ref.selection, fast.selection)
    dst.load_state_dict(src.state_dict())
    for stack, j, k in _grn_pairs(fast):
        grn = ref.grns[k]
        assert isinstance(grn, GatedResidualNetwork)
        _copy_grn(stack, j, grn, to_fast)
