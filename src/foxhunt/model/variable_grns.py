"""The per-variable GRNs of a variable selection network, with stacked weights.

A VSN applies an independent GRN (d_in -> g -> d_model) to each of its n variables and sums
the results weighted by the selection weights (eq. 7-8). Here the n GRNs keep their weights
stacked, [n, fan_in, fan_out] (an nn.Linear's ``weight.T`` per variable, so a reference GRN's
parameters copy in and out one variable at a time), and run as one fused op (fused_grns.py).

For that op every affine map carries its bias as an extra input row fed by a constant 1:
x @ W + b = [x, 1] @ [[W], [b]]. The input z of each variable ends in a 1, the first layer
passes that 1 through (ELU(1) = 1) and so does the second, so no layer adds a bias
separately and the bias gradients come out of the weight-gradient matmuls.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt.model import fused_grns
from foxhunt.model.dropout import FastDropout


class VariableGRNs(nn.Module):
    """n independent GRNs, returning their weighted sum.

    GRN_j(e) = LayerNorm_j(skip_j(e) + GLU_j(dropout(W1_j ELU(W2_j e + b2_j) + b1_j))).
    """

    def __init__(self, n: int, input_size: int, hidden_size: int, output_size: int, dropout: float):
        super().__init__()
        self.n, self.input_size, self.output_size = n, input_size, output_size
        self.hidden_size = g = hidden_size
        self.fc1_weight = nn.Parameter(torch.empty(n, input_size, g))  # W_2
        self.fc1_bias = nn.Parameter(torch.empty(n, g))
        self.fc2_weight = nn.Parameter(torch.empty(n, g, g))  # W_1
        self.fc2_bias = nn.Parameter(torch.empty(n, g))
        self.glu_weight = nn.Parameter(torch.empty(n, g, 2 * output_size))  # [W_5 | W_4]
        self.glu_bias = nn.Parameter(torch.empty(n, 2 * output_size))
        self.has_skip = input_size != output_size
        if self.has_skip:
            self.skip_weight = nn.Parameter(torch.empty(n, input_size, output_size))
            self.skip_bias = nn.Parameter(torch.empty(n, output_size))
        self.norm_weight = nn.Parameter(torch.ones(n, output_size))
        self.norm_bias = nn.Parameter(torch.zeros(n, output_size))
        self.dropout = FastDropout(dropout)  # on eta_1, the input of the GLU
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """nn.Linear's default init, per variable."""
        pairs = [("fc1", self.input_size), ("fc2", self.hidden_size), ("glu", self.hidden_size)]
        if self.has_skip:
            pairs.append(("skip", self.input_size))
        for name, fan_in in pairs:
            bound = 1.0 / math.sqrt(fan_in)
            nn.init.uniform_(getattr(self, f"{name}_weight"), -bound, bound)
            nn.init.uniform_(getattr(self, f"{name}_bias"), -bound, bound)

    def input_weight(self) -> Tensor:
        """[n, input + 1, g + 1 + output]: [e, 1] -> [fc1(e) | 1 | skip(e)] in one matmul."""
        skip_weight: Tensor
        skip_bias: Tensor
        if self.has_skip:
            skip_weight, skip_bias = self.skip_weight, self.skip_bias
        else:  # identity skip
            eye = torch.eye(
                self.input_size, dtype=self.fc1_weight.dtype, device=self.fc1_weight.device
            )
            skip_weight = eye.expand(self.n, -1, -1)
            skip_bias = self.fc1_bias.new_zeros(self.n, self.output_size)
        fc1 = _with_bias(self.fc1_weight, self.fc1_bias)  # [n, input + 1, g]
        skip = _with_bias(skip_weight, skip_bias)  # [n, input + 1, d]
        return torch.cat([fc1, _carry_one(fc1, 1), skip], dim=-1)  # [n, input + 1, g + 1 + d]

    def forward(self, z: Tensor, in_weight: Tensor, weights: Tensor) -> Tensor:
        """sum_j weights[:, j] * GRN_j(input_j) -> [R, output].

        z [n, R, k]: each variable's input features, the last one the constant 1;
        in_weight [n, k, g + 1 + output] maps them to [fc1 pre-activation | 1 | skip]
        (``input_weight()`` for z = [e, 1], or a cheaper folded map); weights [R, n].
        """
        n, rows, _ = z.shape
        fc2 = _with_bias(self.fc2_weight, self.fc2_bias)  # [n, g + 1, g]
        fc2 = torch.cat([fc2, _carry_one(fc2, 1)], dim=-1)  # [n, g + 1, g + 1]
        glu_weight: Tensor = self.glu_weight  # read once (it may be parametrized)
        seed: Tensor | None = None
        mask: Tensor | None = None
        if self.dropout.training and self.dropout.p > 0:
            # CPU: a seed the kernel hashes each bit from; GPU: drawn bits (large blocks
            # there, where hashed indices would take 8x the mask's memory)
            if z.device.type == "cpu":
                seed = torch.as_tensor(self.dropout.hashed_mask(z.device).seed)
            else:
                mask = self.dropout.keep_mask((n, rows, self.hidden_size), z.device)
            glu_weight = glu_weight / self.dropout.keep_probability  # the rescaling, folded in
        glu = _with_bias(glu_weight, self.glu_bias)  # [n, g + 1, 2 * output]
        dtype = glu_weight.dtype  # autocast is off inside: the op runs in the weights' dtype
        with torch.autocast(z.device.type, enabled=False):
            params = (in_weight, fc2, glu, self.norm_weight, self.norm_bias)
            threshold = self.dropout.keep_threshold
            return fused_grns.grn_cells_op(
                z.to(dtype),
                weights.to(dtype),
                *(p.to(dtype) for p in params),
                seed,
                threshold,
                mask,
            )


def _with_bias(weight: Tensor, bias: Tensor) -> Tensor:
    """[n, in, out], [n, out] -> [n, in + 1, out]: x @ W + b as [x, 1] @ [[W], [b]]."""
    return torch.cat([_ContiguousGrad.apply(weight), _ContiguousGrad.apply(bias).unsqueeze(1)], 1)


class _ContiguousGrad(torch.autograd.Function):
    """Identity whose gradient leaves contiguous. ``cat`` hands back strided slices of one
    gradient; reaching the parameters so, they would not match DDP's bucket views (which warns
    and copies every step)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        # not .contiguous(): a [1, d] slice with a leading stride counts as contiguous, keeps
        # that stride, and one variable's bias gradient would still miss the bucket layout
        return grad.clone(memory_format=torch.contiguous_format) if _strided(grad) else grad


def _strided(t: Tensor) -> bool:
    """Whether ``t``'s strides differ from a fresh contiguous tensor's of its shape."""
    expected, step = [], 1
    for size in reversed(t.shape):
        expected.append(step)
        step *= size
    return t.stride() != tuple(reversed(expected))


def _carry_one(augmented: Tensor, width: int) -> Tensor:
    """[n, in + 1, width] zeros but for a 1 in the last row: passes the input's 1 along."""
    return F.pad(
        augmented.new_ones(augmented.shape[0], 1, width), (0, 0, augmented.shape[1] - 1, 0)
    )
