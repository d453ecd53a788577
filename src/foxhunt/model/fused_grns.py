"""One fused op for n GRNs and their weighted sum: eqs. 2-4 and 7-8 for a whole VSN.

Done with autograd, n = 220 GRNs over 64 steps x batch 32 materialize a dozen
[n, rows, d_model] tensors (29M floats each) and stream them through memory forward and
back. This op saves only its inputs and recomputes activations in backward. On CPU in
float32 the C++ kernel (grn_cells.cpp) does the whole op a few (variable, row) cells at a
time; elsewhere (GPU, float64, no compiler) the ATen path below walks blocks of (variables,
rows), on CPU small enough to stay in cache, on a GPU small enough to bound the op's memory
(DEVICE_BLOCK_ELEMENTS), with the matmuls batched over a block's variables (bmm). Forward
and backward are written out by hand; tests compare both paths with autograd on the plain
per-variable GRNs (reference.py).

Shapes: n variables, R rows, k input features (the last the constant 1), g GRN hidden,
d output; weights are "augmented" (see variable_grns.py): their last input row is the bias.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from foxhunt.model import grn_cells
from foxhunt.model.dropout import HashedMask

#: Dropout's keep mask on eta_1: a bool tensor [n, R, g], a seed to hash it from (the C++
#: kernel takes only this kind, and never materializes it), or None for no dropout.
Mask = Tensor | HashedMask | None

#: Cells (variable, row) per block are chosen so that each thread's share of the block's
#: widest activation, [variables, rows, 2 * d] floats, stays near this many elements
#: (1 MiB in fp32: half a core's L2 here, leaving room for the block's other tensors).
BLOCK_ELEMENTS_PER_THREAD = 1 << 18
#: Off the CPU (GPU), the same bound on the block's whole widest activation: 256 MiB in fp32.
#: Backward holds about four such tensors at once, so one block of a whole VSN would need
#: about 4 x [n, rows, 2d]: 7 GiB for tft-225's past VSN at batch 32 (220 variables,
#: 4,096 rows, d 256), over a 4 GB card by itself whatever is checkpointed. Blocks of this
#: size still fill a GPU (32 variables x 4,096 rows there).
DEVICE_BLOCK_ELEMENTS = 1 << 26
EPS = 1e-5  # LayerNorm epsilon, as nn.LayerNorm


def fused_weighted_grns(
    z: Tensor,  # [n, R, k]
    weights: Tensor,  # [R, n] selection weights
    mask: Mask,  # dropout's keep mask on eta_1, [n, R, g] (its rescaling is folded in glu)
    cells: int,  # block size in (variable, row) cells
    in_w: Tensor,  # [n, k, g + 1 + d]: z -> [fc1 pre-activation | 1 | skip]
    fc2: Tensor,  # [n, g + 1, g + 1]: [eta_2, 1] -> [eta_1, 1]
    glu: Tensor,  # [n, g + 1, 2d]: [eta_1, 1] -> GLU input (values | gates)
    norm_w: Tensor,  # [n, d] LayerNorm weights
    norm_b: Tensor,  # [n, d] LayerNorm biases
) -> Tensor:
    """out[r] = sum_j weights[r, j] * GRN_j(z[j, r]) -> [R, d]."""
    out = _FusedWeightedGRNs.apply(z, weights, mask, cells, in_w, fc2, glu, norm_w, norm_b)
    assert isinstance(out, Tensor)
    return out


def _blocks(n: int, rows: int, cells: int) -> Iterator[tuple[slice, slice]]:
    """(variables, rows) blocks covering [n, rows] with about ``cells`` cells each."""
    nv = max(1, min(n, cells // rows))
    nr = min(rows, max(1, cells // nv))
    for v in range(0, n, nv):
        for r in range(0, rows, nr):
            yield slice(v, min(v + nv, n)), slice(r, r + nr)


def _kernel(mask: Mask, *tensors: Tensor) -> ModuleType | None:
    """The C++ kernel for these tensors (float32 on CPU, where it builds) and a mask given by
    a seed (or none), else None."""
    if isinstance(mask, Tensor) or not grn_cells.usable(*tensors):
        return None
    return grn_cells.load()


def _seed(mask: HashedMask | None) -> tuple[int, int]:
    """The kernel's dropout arguments: seed and keep threshold (2^16 keeps everything)."""
    return (0, 1 << 16) if mask is None else (mask.seed, mask.threshold)


def _block_mask(mask: Mask, vs: slice, rs: slice, shape: tuple[int, ...]) -> Tensor | None:
    """The keep mask of one block of cells, [v, r, g] bool, for the ATen path."""
    if mask is None:
        return None
    if isinstance(mask, Tensor):
        return mask[vs, rs]
    n, rows, g = shape  # hashed masks are built on CPU only (variable_grns.py)
    first = torch.arange(vs.start, min(vs.stop, n))[:, None] * rows
    cells = first + torch.arange(rs.start, min(rs.stop, rows))  # [v, r] flat cell indices
    return mask.keep(cells[..., None] * g + torch.arange(g))


def _gated(
    z: Tensor, mask: Tensor | None, in_w: Tensor, fc2: Tensor, glu: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Eqs. 2-4 up to the GLU for one block, z [v, r, k]: [eta_2, 1], [eta_1, 1] and the GLU
    input [v, r, 2d]."""
    g = fc2.shape[-1] - 1
    a2 = F.elu(torch.bmm(z, in_w[..., : g + 1]))  # [eta_2, 1]: ELU(1) = 1 passes the 1 on
    e1 = torch.bmm(a2, fc2)  # [eta_1, 1] [v, r, g + 1]
    if mask is not None:
        e1[..., :g].mul_(mask.view(torch.uint8))  # dropout (a uint8 factor: 3x a bool's speed)
    return a2, e1, torch.bmm(e1, glu)


class _FusedWeightedGRNs(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any,
        z: Tensor,
        weights: Tensor,
        mask: Mask,
        cells: int,
        *params: Tensor,
    ) -> Tensor:
        tensor_mask = mask if isinstance(mask, Tensor) else None
        ctx.save_for_backward(z, weights, tensor_mask, *params)
        ctx.cells, ctx.hashed = cells, None if isinstance(mask, Tensor) else mask
        in_w, fc2, glu, norm_w, norm_b = params
        kernel = _kernel(mask, z, weights, *params)
        if kernel is not None:  # the LayerNorm biases too: no sum of it split by thread
            out = weights.new_zeros(weights.shape[0], norm_b.shape[-1])
            z_c, weights_t, *weights_c = (
                t.contiguous() for t in (z, weights.t(), in_w, fc2, glu, norm_w, norm_b)
            )
            kernel.forward(z_c, weights_t, *_seed(ctx.hashed), *weights_c, out, EPS)
            return out
        out = weights @ norm_b  # [R, d]: the LayerNorm biases, sum_j w_j b_j
        skip_ws = in_w[..., fc2.shape[-1] :].contiguous()  # [n, k, d]
        weights_t = weights.t().contiguous()  # [n, R]
        for vs, rs in _blocks(z.shape[0], z.shape[1], cells):
            mask_b = _block_mask(mask, vs, rs, (z.shape[0], z.shape[1], fc2.shape[-1] - 1))
            zb, skip_w = z[vs, rs], skip_ws[vs]
            _, _, gl = _gated(zb, mask_b, in_w[vs], fc2[vs], glu[vs])
            w_b = weights_t[vs, rs].contiguous()
            AtenTail.forward(gl, zb, skip_w, w_b, norm_w[vs], out[rs], EPS)
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, ...]:
        z, weights, tensor_mask, *params = ctx.saved_tensors  # checkpointing: one unpack only
        mask = tensor_mask if tensor_mask is not None else ctx.hashed
        saved = (z, weights, mask, *params)
        with torch.autocast(grad_out.device.type, enabled=False):
            grad_out = grad_out.to(z.dtype).contiguous()
            kernel = _kernel(mask, z, weights, *params, grad_out)
            if kernel is not None:
                grads = _kernel_backward(kernel, saved, ctx.needs_input_grad[0], grad_out)
            else:
                grads = _backward(saved, ctx.cells, ctx.needs_input_grad[0], grad_out)
        return (grads[0], grads[1], None, None, *grads[2:])


def _kernel_backward(
    kernel: ModuleType, saved: tuple[Any, ...], need_z: bool, grad_out: Tensor
) -> tuple[Tensor | None, ...]:
    """The C++ kernel's backward: gradients of z, weights and the five parameters, each sum
    taken in one thread in row order (bit-identical at any thread count)."""
    z, weights, mask, *params = saved
    z, in_w, fc2, glu, norm_w, norm_b = (t.contiguous() for t in (z, *params))
    weights_t = weights.t().contiguous()  # [n, R]
    d_weights_t = torch.empty_like(weights_t)
    d_z = torch.empty_like(z) if need_z else z.new_empty(0)
    d_in_w, d_fc2, d_glu = torch.zeros_like(in_w), torch.zeros_like(fc2), torch.zeros_like(glu)
    d_norm_w, d_norm_b = torch.zeros_like(norm_w), torch.zeros_like(norm_b)
    kernel.backward(
        z, weights_t, *_seed(mask), in_w, fc2, glu, norm_w, norm_b, grad_out,
        d_weights_t, d_z, d_in_w, d_fc2, d_glu, d_norm_w, d_norm_b, EPS,
    )  # fmt: skip
    return d_z if need_z else None, d_weights_t.t(), d_in_w, d_fc2, d_glu, d_norm_w, d_norm_b


def _backward(
    saved: tuple[Any, ...], cells: int, need_z: bool, grad_out: Tensor
) -> tuple[Tensor | None, ...]:
    """The ATen path's backward, block by block."""
    z, weights, mask, in_w, fc2, glu, norm_w, norm_b = saved
    g = fc2.shape[-1] - 1
    skip_ws = in_w[..., g + 1 :].contiguous()  # [n, k, d]
    weights_t = weights.t().contiguous()  # [n, R]
    d_in_w, d_fc2, d_glu = torch.zeros_like(in_w), torch.zeros_like(fc2), torch.zeros_like(glu)
    d_norm_w = torch.zeros_like(norm_w)
    d_norm_b = weights_t @ grad_out  # [n, d]
    d_weights_t = norm_b @ grad_out.t()  # [n, R]
    d_z = torch.zeros_like(z) if need_z else None
    for vs, rs in _blocks(z.shape[0], z.shape[1], cells):
        zb, mask_b = z[vs, rs], _block_mask(mask, vs, rs, (z.shape[0], z.shape[1], g))
        a2, e1, gl = _gated(zb, mask_b, in_w[vs], fc2[vs], glu[vs])
        w_b, grad_b, skip_w = weights_t[vs, rs].contiguous(), grad_out[rs], skip_ws[vs]
        d_gl, d_w = torch.empty_like(gl), torch.empty_like(w_b)
        d_y = gl.new_empty(*gl.shape[:-1], skip_w.shape[-1])
        args = (gl, zb, skip_w, w_b, norm_w[vs], grad_b)
        AtenTail.backward(*args, d_gl, d_y, d_w, d_norm_w[vs], EPS)
        d_weights_t[vs, rs] += d_w
        # GLU input gl = [eta_1, 1] @ glu, dropout, eta_1 = [eta_2, 1] @ fc2
        d_glu[vs].baddbmm_(e1.transpose(1, 2), d_gl)
        d_e1 = torch.bmm(d_gl, glu[vs, :g].transpose(1, 2))  # [v, r, g]
        if mask_b is not None:
            d_e1.mul_(mask_b.view(torch.uint8))
        d_fc2[vs, :, :g].baddbmm_(a2.transpose(1, 2), d_e1)
        d_a2 = torch.bmm(d_e1, fc2[vs, :g, :g].transpose(1, 2))  # [v, r, g]
        d_pre = torch.ops.aten.elu_backward(d_a2, 1.0, 1.0, 1.0, True, a2[..., :g])
        # the input map: fc1 pre-activation and skip
        d_in_w[vs, :, :g].baddbmm_(zb.transpose(1, 2), d_pre)
        d_in_w[vs, :, g + 1 :].baddbmm_(zb.transpose(1, 2), d_y)
        if d_z is not None:
            d_zb = torch.bmm(d_pre, in_w[vs, :, :g].transpose(1, 2))
            d_z[vs, rs] = d_zb.baddbmm_(d_y, in_w[vs, :, g + 1 :].transpose(1, 2))
    return d_z, d_weights_t.t(), d_in_w, d_fc2, d_glu, d_norm_w, d_norm_b


class AtenTail:
    """A block's elementwise tail in ATen ops: GLU and skip, LayerNorm without its bias, and
    the selection-weighted sum added to ``out``; backward gives the gradients of the GLU
    input (d_gl), of y (d_y, the skip's output's), of the weights (d_w) and adds the gains'."""

    @staticmethod
    def forward(
        gl: Tensor, z: Tensor, skip_w: Tensor, w: Tensor, gain: Tensor, out: Tensor, eps: float
    ) -> None:
        y = F.glu(gl, dim=-1).baddbmm_(z, skip_w)  # GLU + skip [v, r, d]
        for i in range(y.shape[0]):  # LayerNorm and weighted sum (eq. 8), per variable
            normed = F.layer_norm(y[i], y.shape[-1:], gain[i], None, eps)  # [r, d]
            out.addcmul_(normed, w[i].unsqueeze(-1))

    @staticmethod
    def backward(
        gl: Tensor,
        z: Tensor,
        skip_w: Tensor,
        w: Tensor,
        gain: Tensor,
        grad: Tensor,
        d_gl: Tensor,
        d_y: Tensor,
        d_w: Tensor,
        d_gain: Tensor,
        eps: float,
    ) -> None:
        d = skip_w.shape[-1]
        y = F.glu(gl, dim=-1).baddbmm_(z, skip_w)  # [v, r, d]
        for i in range(y.shape[0]):
            normed, mean, rstd = torch.native_layer_norm(y[i], (d,), gain[i], None, eps)
            d_w[i] = torch.linalg.vecdot(grad, normed)
            d_normed = grad * w[i].unsqueeze(-1)  # [r, d]
            d_y[i], d_gamma, _ = torch.ops.aten.native_layer_norm_backward(
                d_normed, y[i], (d,), mean, rstd, gain[i], None, [True, True, False]
            )
            d_gain[i] += d_gamma
        d_gl.copy_(torch.ops.aten.glu_backward(d_y, gl, -1))
