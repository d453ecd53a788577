"""The per-variable GRNs of a variable selection network, run as one batched, fused op.

A VSN applies an independent GRN (d_in -> g -> d_model) to each of its n variables and sums
the results weighted by the selection weights (eq. 7). Done naively that materializes several
[rows, n, d_model] tensors (220 variables x 64 steps x batch 32 x 64 ≈ 29M floats each) and
streams them through memory a dozen times. Here the n GRNs keep stacked weights of shape
[n, fan_in, fan_out] and :class:`_FusedWeightedGRNs` runs eq. 2-4 and eq. 7 in row blocks that
fit in cache, keeping only its inputs for backward and recomputing a block's activations
there (forward and backward are written out by hand, checked against autograd in tests).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

#: Rows per block are chosen so that the widest block activation, [n, rows, 2 * d_model]
#: floats, stays near this many elements (≈ 2 MiB in fp32: one core's L2 cache).
BLOCK_ELEMENTS = 1 << 19
EPS = 1e-5  # LayerNorm epsilon, as nn.LayerNorm


class VariableGRNs(nn.Module):
    """n independent GRNs with stacked weights, returning their weighted sum.

    GRN_j(e) = LayerNorm_j(skip_j(e) + GLU_j(dropout(W1_j ELU(W2_j e + b2_j) + b1_j))).
    Weight layout is [n, fan_in, fan_out] (an nn.Linear's ``weight.T`` per variable), so a
    reference GRN's parameters copy in and out one variable at a time.
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
        self.dropout = nn.Dropout(dropout)
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
        """[n, input_size + 1, g + output]: maps [e, 1] to [fc1(e) | skip(e)] in one matmul."""
        if self.has_skip:
            weight = torch.cat([self.fc1_weight, self.skip_weight], dim=-1)
            bias = torch.cat([self.fc1_bias, self.skip_bias], dim=-1)
        else:  # identity skip
            eye = torch.eye(
                self.input_size, dtype=self.fc1_weight.dtype, device=self.fc1_weight.device
            )
            weight = torch.cat([self.fc1_weight, eye.expand(self.n, -1, -1)], dim=-1)
            bias = F.pad(self.fc1_bias, (0, self.output_size))
        return torch.cat([weight, bias.unsqueeze(1)], dim=1)

    def forward(self, z: Tensor, in_weight: Tensor, weights: Tensor) -> Tensor:
        """sum_j weights[:, j] * GRN_j(input_j).

        z [n, R, k] holds each variable's input features; ``in_weight`` [n, k, g + output]
        maps them to the fc1 pre-activation and the skip (``input_weight()`` for z = [e, 1];
        a folded map for cheaper inputs). weights [R, n] -> output [R, output].
        """
        n, rows, _ = z.shape
        mask = None
        if self.training and self.dropout.p > 0:  # nn.Dropout's mask, applied to eta_1 inside
            mask = self.dropout(z.new_ones(n, rows, self.hidden_size))
        # CPU: blocks of (variable, row) cells whose widest activation fits in cache
        pairs = BLOCK_ELEMENTS // (2 * self.output_size) if z.device.type == "cpu" else n * rows
        params: tuple[Tensor, ...] = (self.fc2_weight, self.fc2_bias, self.glu_weight)
        params += (self.glu_bias, self.norm_weight, self.norm_bias)
        dtype = self.glu_weight.dtype  # autocast is off inside: this op runs in the weights' dtype
        with torch.autocast(z.device.type, enabled=False):
            z, weights = z.to(dtype), weights.to(dtype).contiguous()
            mask = None if mask is None else mask.to(dtype)
            out = _FusedWeightedGRNs.apply(z, weights, mask, pairs, in_weight.to(dtype), *params)
        assert isinstance(out, Tensor)
        return out


def _block_forward(z: Tensor, mask: Tensor | None, w: _Weights) -> tuple[Tensor, ...]:
    """Eq. 2-4 for one block of variables and rows; returns what backward needs."""
    g = w.fc2_w.shape[-1]
    a2 = F.elu(torch.bmm(z, w.in_w[..., :g]))  # eta_2 [v, r, g]
    e1 = torch.bmm(a2, w.fc2_w).add_(w.fc2_b.unsqueeze(1))  # eta_1 [v, r, g]
    if mask is not None:
        e1.mul_(mask)
    gl = torch.bmm(e1, w.glu_w).add_(w.glu_b.unsqueeze(1))  # [v, r, 2d]
    y = torch.baddbmm(F.glu(gl, dim=-1), z, w.in_w[..., g:])  # GLU + skip [v, r, d]
    d = y.shape[-1]
    nrm, mean, rstd = torch.native_layer_norm(y, (d,), y.new_ones(d), y.new_zeros(d), EPS)
    return a2, e1, gl, y, nrm, mean, rstd


class _Weights(NamedTuple):
    in_w: Tensor  # [n, k, g + d]: [fc1 | skip] of the block input z
    fc2_w: Tensor  # [n, g, g]
    fc2_b: Tensor  # [n, g]
    glu_w: Tensor  # [n, g, 2d]
    glu_b: Tensor  # [n, 2d]
    norm_w: Tensor  # [n, d]
    norm_b: Tensor  # [n, d]

    def block(self, variables: slice) -> _Weights:
        return _Weights(*(t[variables] for t in self))


def _blocks(n: int, rows: int, pairs: int) -> Iterator[tuple[slice, slice]]:
    """(variables, rows) slices covering [n, rows] with about ``pairs`` cells each."""
    nv = max(1, min(n, pairs // rows))
    nr = min(rows, max(1, pairs // nv))
    for v in range(0, n, nv):
        for r in range(0, rows, nr):
            yield slice(v, v + nv), slice(r, r + nr)


class _FusedWeightedGRNs(torch.autograd.Function):
    """out[r] = sum_j weights[r, j] * GRN_j(z_j[r]), block by block, recomputed in backward."""

    @staticmethod
    def forward(
        ctx: Any,
        z: Tensor,  # [n, R, k]
        weights: Tensor,  # [R, n]
        mask: Tensor | None,  # [n, R, g]
        pairs: int,
        *params: Tensor,  # the fields of _Weights
    ) -> Tensor:
        ctx.save_for_backward(z, weights, mask, *params)
        ctx.pairs = pairs
        w = _Weights(*params)
        out = weights @ w.norm_b  # [R, d]: the LayerNorm biases, sum_j w_j b_j
        for vs, rs in _blocks(z.shape[0], z.shape[1], pairs):
            blk_mask = None if mask is None else mask[vs, rs]
            nrm = _block_forward(z[vs, rs], blk_mask, w.block(vs))[4]  # [v, r, d]
            nrm.mul_(w.norm_w[vs].unsqueeze(1)).mul_(weights[rs, vs].t().unsqueeze(-1))
            out[rs] += nrm.sum(0)
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        saved = ctx.saved_tensors  # read once: checkpointing allows a single unpack
        with torch.autocast(grad_out.device.type, enabled=False):
            grad_out = grad_out.to(saved[0].dtype).contiguous()
            return _backward(saved, ctx.pairs, ctx.needs_input_grad[0], grad_out)


def _backward(
    saved: tuple[Tensor, ...], pairs: int, need_z: bool, grad_out: Tensor
) -> tuple[Tensor | None, ...]:
    z, weights, mask, *params = saved
    w = _Weights(*params)
    dw = _Weights(*(torch.zeros_like(t) for t in params))
    d_norm_w = dw.norm_w.unsqueeze(1)  # [n, 1, d] view of dw.norm_w
    dw.norm_b.copy_(weights.t() @ grad_out)  # [n, d]
    d_weights = grad_out @ w.norm_b.t()  # [R, n]
    d_z = torch.zeros_like(z) if need_z else None
    g = w.fc2_w.shape[-1]
    for vs, rs in _blocks(z.shape[0], z.shape[1], pairs):
        zb, maskb, wb, dwb = (
            z[vs, rs],
            None if mask is None else mask[vs, rs],
            w.block(vs),
            dw.block(vs),
        )
        a2, e1, gl, y, nrm, mean, rstd = _block_forward(zb, maskb, wb)
        gb, wt = grad_out[rs], weights[rs, vs].t().unsqueeze(-1)  # [r, d], [v, r, 1]
        # eq. 7 and the LayerNorm affine
        prod = nrm * gb  # [v, r, d]
        d_norm_w[vs].baddbmm_(wt.transpose(1, 2), prod)
        d_weights[rs, vs] += torch.bmm(prod, wb.norm_w.unsqueeze(-1)).squeeze(-1).t()
        d_nrm = (gb * wb.norm_w.unsqueeze(1)).mul_(wt)  # [v, r, d]
        d = y.shape[-1]
        d_y = torch.ops.aten.native_layer_norm_backward(
            d_nrm, y, (d,), mean, rstd, y.new_ones(d), None, [True, False, False]
        )[0]
        # GLU, eta_1, eta_2
        d_gl = torch.ops.aten.glu_backward(d_y, gl, -1)  # [v, r, 2d]
        dwb.glu_w.baddbmm_(e1.transpose(1, 2), d_gl)
        dwb.glu_b.add_(d_gl.sum(1))
        d_e1 = torch.bmm(d_gl, wb.glu_w.transpose(1, 2))  # [v, r, g]
        if maskb is not None:
            d_e1.mul_(maskb)
        dwb.fc2_w.baddbmm_(a2.transpose(1, 2), d_e1)
        dwb.fc2_b.add_(d_e1.sum(1))
        d_a2 = torch.bmm(d_e1, wb.fc2_w.transpose(1, 2))
        d_pre1 = torch.ops.aten.elu_backward(d_a2, 1.0, 1.0, 1.0, True, a2)  # [v, r, g]
        # input projections: fc1 and skip
        dwb.in_w[..., :g].baddbmm_(zb.transpose(1, 2), d_pre1)
        dwb.in_w[..., g:].baddbmm_(zb.transpose(1, 2), d_y)
        if d_z is not None:
            d_z[vs, rs] = torch.bmm(d_pre1, wb.in_w[..., :g].transpose(1, 2))
            d_z[vs, rs].baddbmm_(d_y, wb.in_w[..., g:].transpose(1, 2))
    return (d_z, d_weights, None, None, *dw)
