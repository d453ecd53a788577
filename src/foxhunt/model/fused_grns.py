"""One op for n GRNs and their weighted sum: eqs. 2-4 and 7-8 for a whole VSN.

The math is written once, in :func:`weighted_grns`. It is registered as the custom op
``foxhunt::grn_cells`` (with its backward, ``foxhunt::grn_cells_backward``), so autograd,
``torch.compile``, ``FlopCounterMode`` and fake tensors all see one op with a known shape:

- on CPU in float32 its implementation is the C++ kernel (grn_cells.cpp), which does the
  whole op a few (variable, row) cells at a time and recomputes in backward: nothing of
  width [variables, rows, *] is in memory. Tests hold it to :func:`weighted_grns`.
- elsewhere (GPU, float64, no compiler) it runs :func:`weighted_grns` block by block of
  (variables, rows), on CPU small enough to stay in cache, on a GPU small enough to bound
  the op's memory (DEVICE_BLOCK_ELEMENTS); its backward recomputes each block and takes the
  block's gradients with ``torch.func.vjp`` of the same function.
- ``DECOMPOSITIONS`` maps the op to :func:`weighted_grns` on the whole tensors: what
  ``torch.export`` programs (and so the ONNX export) and a decomposing compile run.

Shapes: n variables, R rows, k input features (the last the constant 1), g GRN hidden,
d output; weights are "augmented" (see variable_grns.py): their last input row is the bias.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.flop_counter import register_flop_formula

from foxhunt.model import grn_cells
from foxhunt.model.dropout import KEEP_ALL, HashedMask

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


def weighted_grns(
    z: Tensor,  # [n, R, k]
    weights: Tensor,  # [R, n] selection weights
    keep: Tensor | None,  # dropout's keep mask on eta_1, [n, R, g] bool (rescaling is in glu)
    in_w: Tensor,  # [n, k, g + 1 + d]: z -> [fc1 pre-activation | 1 | skip]
    fc2: Tensor,  # [n, g + 1, g + 1]: [eta_2, 1] -> [eta_1, 1]
    glu: Tensor,  # [n, g + 1, 2d]: [eta_1, 1] -> GLU input (values | gates)
    norm_w: Tensor,  # [n, d] LayerNorm weights
    norm_b: Tensor,  # [n, d] LayerNorm biases
) -> Tensor:
    """out[r] = sum_j weights[r, j] * GRN_j(z[j, r]) -> [R, d]: the op's math, every path's.

    The augmented weights' bias rows are added here as biases, and their columns that carry
    the constant 1 along (for the kernel's matmuls) are not read: a 1 has no gradient.
    """
    g, d = fc2.shape[-1] - 1, norm_w.shape[-1]
    eta2 = F.elu(torch.bmm(z, in_w[..., :g]))  # eq. 4; z ends in a 1: fc1's bias row
    eta1 = torch.baddbmm(fc2[:, g:, :g], eta2, fc2[:, :g, :g])  # eq. 3 [n, R, g]
    if keep is not None:
        eta1 = eta1 * keep  # dropout (its rescaling is folded into glu)
    gated = F.glu(torch.baddbmm(glu[:, g:], eta1, glu[:, :g]), dim=-1)  # eq. 5 [n, R, d]
    y = gated + torch.bmm(z, in_w[..., g + 1 :])  # + skip
    normed = F.layer_norm(y, (d,), None, None, EPS) * norm_w.unsqueeze(1)  # eq. 2, no bias
    return (normed * weights.t().unsqueeze(-1)).sum(0) + weights @ norm_b  # eq. 8


#: The keep mask of a block of (variables, rows) cells, [v, r, g] bool, or None.
KeepMask = Callable[[slice, slice], Tensor | None]


def keep_mask(
    seed: Tensor | None, threshold: int, mask: Tensor | None, shape: tuple[int, int, int]
) -> KeepMask:
    """The keep mask of a block of (variables, rows), [v, r, g] bool, from a drawn ``mask``
    (GPU) or a hashed ``seed`` (CPU: the bits the C++ kernel computes), or None."""

    def block(vs: slice, rs: slice) -> Tensor | None:
        if mask is not None:
            return mask[vs, rs]
        if seed is None or threshold >= KEEP_ALL:
            return None
        n, rows, g = shape
        first = torch.arange(n, device=seed.device)[vs, None] * rows
        cells = first + torch.arange(rows, device=seed.device)[rs]  # [v, r] flat cell indices
        index = cells[..., None] * g + torch.arange(g, device=seed.device)  # [v, r, g]
        return HashedMask(seed, threshold).keep(index)

    return block


def _blocks(n: int, rows: int, cells: int) -> Iterator[tuple[slice, slice]]:
    """(variables, rows) blocks covering [n, rows] with about ``cells`` cells each."""
    nv = max(1, min(n, cells // rows))
    nr = min(rows, max(1, cells // nv))
    for v in range(0, n, nv):
        for r in range(0, rows, nr):
            yield slice(v, min(v + nv, n)), slice(r, r + nr)


def _cells(device: torch.device, d: int) -> int:
    """Cells per block whose widest activation [cells, 2d] stays in cache (CPU) or within
    the bound on the op's memory (GPU)."""
    budget = DEVICE_BLOCK_ELEMENTS
    if device.type == "cpu":
        budget = BLOCK_ELEMENTS_PER_THREAD * torch.get_num_threads()
    return max(1, budget // (2 * d))


def _seed(seed: Tensor | None, threshold: int) -> tuple[int, int]:
    """The kernel's dropout arguments: seed and keep threshold (2^16 keeps everything)."""
    return (0, KEEP_ALL) if seed is None else (int(seed), threshold)


@torch.library.custom_op("foxhunt::grn_cells", mutates_args=())
def grn_cells_op(
    z: Tensor,
    weights: Tensor,
    in_w: Tensor,
    fc2: Tensor,
    glu: Tensor,
    norm_w: Tensor,
    norm_b: Tensor,
    seed: Tensor | None,
    threshold: int,
    mask: Tensor | None,
) -> Tensor:
    """:func:`weighted_grns`, dropout given by a hashed ``seed`` (int64, with ``threshold``)
    or a drawn ``mask`` [n, R, g] bool; neither: no dropout."""
    params = (in_w, fc2, glu, norm_w, norm_b)
    kernel = grn_cells.kernel_for(mask, z, weights, *params)
    if kernel is not None:
        return grn_cells.forward(kernel, z, weights, params, _seed(seed, threshold), EPS)
    (n, rows, _), d = z.shape, norm_w.shape[-1]
    keep = keep_mask(seed, threshold, mask, (n, rows, fc2.shape[-1] - 1))
    out = weights.new_zeros(rows, d)
    for vs, rs in _blocks(n, rows, _cells(z.device, d)):
        block = (p[vs] for p in params)
        out[rs] += weighted_grns(z[vs, rs], weights[rs, vs], keep(vs, rs), *block)
    return out


@grn_cells_op.register_fake
def _fake_forward(z: Tensor, weights: Tensor, *rest: Any) -> Tensor:
    return weights.new_empty(weights.shape[0], rest[3].shape[-1])  # [R, d]


@torch.library.custom_op("foxhunt::grn_cells_backward", mutates_args=())
def grn_cells_backward(
    grad: Tensor,
    z: Tensor,
    weights: Tensor,
    in_w: Tensor,
    fc2: Tensor,
    glu: Tensor,
    norm_w: Tensor,
    norm_b: Tensor,
    seed: Tensor | None,
    threshold: int,
    mask: Tensor | None,
    need_z: bool,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """The C++ kernel's backward (recomputing): gradients of z (empty unless ``need_z``),
    weights and the five parameters. Only where the kernel runs the forward."""
    params = (in_w, fc2, glu, norm_w, norm_b)
    kernel = grn_cells.kernel_for(mask, grad, z, weights, *params)
    if kernel is None:
        raise RuntimeError("foxhunt::grn_cells_backward runs the C++ kernel only")
    drop = _seed(seed, threshold)
    return grn_cells.backward(kernel, grad, z, weights, params, drop, need_z, EPS)


def _blocked_backward(
    grad: Tensor, z: Tensor, weights: Tensor, params: list[Tensor], keep: KeepMask
) -> tuple[Tensor, ...]:
    """Elsewhere, block by block: each block's forward recomputed and its gradients taken by
    ``torch.func.vjp`` of :func:`weighted_grns` (an op's implementation runs below autograd,
    so this runs in the op's autograd formula, not in an op)."""
    d_z, d_weights, *d_params = (torch.zeros_like(t) for t in (z, weights, *params))
    n, rows, _ = z.shape
    for vs, rs in _blocks(n, rows, _cells(z.device, params[3].shape[-1])):
        keep_b = keep(vs, rs)

        def block(zb: Tensor, wb: Tensor, *pb: Tensor, keep_b: Tensor | None = keep_b) -> Tensor:
            return weighted_grns(zb, wb, keep_b, *pb)

        _, vjp, *_ = torch.func.vjp(block, z[vs, rs], weights[rs, vs], *(p[vs] for p in params))
        gz, gw, *gp = vjp(grad[rs].contiguous())
        d_z[vs, rs] += gz
        d_weights[rs, vs] += gw
        for total, part in zip(d_params, gp, strict=True):
            total[vs] += part
    return d_z, d_weights, *d_params


@grn_cells_backward.register_fake
def _fake_backward(grad: Tensor, z: Tensor, weights: Tensor, *rest: Any) -> tuple[Tensor, ...]:
    d_z = torch.empty_like(z) if rest[-1] else z.new_empty(0)
    return (d_z, torch.empty_like(weights), *(torch.empty_like(p) for p in rest[:5]))


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
    *tensors, seed, threshold, mask = inputs
    ctx.save_for_backward(*tensors, seed, mask)  # checkpointing: unpacked once, in backward
    ctx.threshold = threshold


def _backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
    z, weights, *params, seed, mask = ctx.saved_tensors
    need_z = ctx.needs_input_grad[0]
    with torch.autocast(grad.device.type, enabled=False):
        grad = grad.to(z.dtype)
        if grn_cells.kernel_for(mask, grad, z, weights, *params) is not None:
            d_z, *grads = grn_cells_backward(
                grad, z, weights, *params, seed, ctx.threshold, mask, need_z
            )
        else:
            keep = keep_mask(seed, ctx.threshold, mask, (*z.shape[:2], params[1].shape[-1] - 1))
            d_z, *grads = _blocked_backward(grad, z, weights, params, keep)
    return (d_z if need_z else None, *grads, None, None, None)


grn_cells_op.register_autograd(_backward, setup_context=_setup_context)


def _decomposed(
    z: Tensor,
    weights: Tensor,
    in_w: Tensor,
    fc2: Tensor,
    glu: Tensor,
    norm_w: Tensor,
    norm_b: Tensor,
    seed: Tensor | None,
    threshold: int,
    mask: Tensor | None,
) -> Tensor:
    """The op as :func:`weighted_grns` on the whole tensors (looked up at each call)."""
    n, rows, _ = z.shape
    keep = keep_mask(seed, threshold, mask, (n, rows, fc2.shape[-1] - 1))
    return weighted_grns(z, weights, keep(slice(None), slice(None)), in_w, fc2, glu, norm_w, norm_b)


#: The op's decomposition, for ``ExportedProgram.run_decompositions`` and compilers.
DECOMPOSITIONS: dict[Any, Callable[..., Tensor]] = {
    torch.ops.foxhunt.grn_cells.default: _decomposed
}


def _matmul_flops(z: Any, fc2: Any, norm_w: Any) -> tuple[int, int, int, int]:
    """From the shapes: per (variable, row) cell, the multiply-adds of :func:`weighted_grns`'s
    maps of z (fc1, skip) and of its hidden maps (fc2, GLU); d; and the number of cells."""
    n, rows, k = z
    g, d = fc2[-1] - 1, norm_w[-1]
    return k * (g + d), g * g + g * 2 * d, d, n * rows


@register_flop_formula(torch.ops.foxhunt.grn_cells)
def _forward_flops(
    z: Any, weights: Any, in_w: Any, fc2: Any, glu: Any, norm_w: Any, *_: Any, **__: Any
) -> int:
    """The matmuls of :func:`weighted_grns` (the C++ kernel's are the same), ``weights @
    norm_b`` included."""
    inputs, hidden, d, cells = _matmul_flops(z, fc2, norm_w)
    return 2 * cells * (inputs + hidden + d)


@register_flop_formula(torch.ops.foxhunt.grn_cells_backward)
def _backward_flops(
    grad: Any,
    z: Any,
    weights: Any,
    in_w: Any,
    fc2: Any,
    glu: Any,
    norm_w: Any,
    *args: Any,
    **_: Any,
) -> int:
    """The forward recomputed, the parameters' gradients (as many again, the selection
    weights' and norm_b's included), the hidden activations' and, when asked for, z's."""
    inputs, hidden, d, cells = _matmul_flops(z, fc2, norm_w)
    need_z = args[-1]
    return 2 * cells * (2 * (inputs + hidden + d) + hidden + (inputs if need_z else 0))
