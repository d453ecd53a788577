"""The C++ kernel of a VSN's per-variable GRNs (grn_cells.cpp) against the ATen path."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch

from foxhunt.model import fused_grns, grn_cells
from foxhunt.model.variable_grns import VariableGRNs
from foxhunt.model.variable_selection import VariableSelectionNetwork

RequireKernel = Callable[[ModuleType | None, str], ModuleType]


def test_kernel_builds_where_there_is_a_compiler(require_kernel: RequireKernel) -> None:
    require_kernel(grn_cells.load(), "the grn_cells kernel")


def test_kernel_is_off_when_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "0")
    assert grn_cells.load() is None
    assert not grn_cells.usable(torch.zeros(1, dtype=torch.float64))


def test_off_the_cpu_the_kernel_is_never_built_and_the_mask_is_drawn_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a CUDA run takes (here on the meta device, which runs no kernels): the ATen path
    with a keep mask drawn on the tensors' device. Loading the kernel would build it, half a minute
    of compiling on a GPU machine, for nothing it could run."""

    def no_build() -> None:
        raise AssertionError("the CPU kernel was loaded for tensors off the CPU")

    masks: list[object] = []
    real_op = fused_grns.grn_cells_op

    def spy(*args: Any) -> Any:
        masks.append(args[-1])  # the drawn mask (the hashed seed is args[-3])
        assert args[-3] is None
        return real_op(*args)

    monkeypatch.setattr(grn_cells, "load", no_build)
    monkeypatch.setattr(fused_grns, "grn_cells_op", spy)
    # autocast knows no meta device; the module turns it off around the op, a no-op here
    monkeypatch.setattr(torch, "autocast", lambda *args, **kwargs: contextlib.nullcontext())
    vsn = VariableSelectionNetwork(
        5, (3,), variable_size=4, hidden_size=8, dropout=0.1, context_size=8
    ).to("meta")
    real = torch.randn(2, 3, 5, device="meta", requires_grad=True)
    codes = torch.zeros(2, 3, 1, dtype=torch.long, device="meta")
    context = torch.randn(2, 8, device="meta")
    out, weights = vsn(real, codes, context)
    (out.sum() + weights.sum()).backward()
    assert real.grad is not None and real.grad.shape == real.shape
    assert len(masks) == 2  # the real and the categorical variables' GRNs
    assert all(isinstance(m, torch.Tensor) and m.device.type == "meta" for m in masks)
    vsn.eval()(real, codes, context)[0].sum().backward()  # no mask: the kernel's other way in
    assert masks[2:] == [None, None]
    # blocks bounded by the device's budget (GLU input [cells, 2 * 8]), not the CPU's cache
    assert fused_grns._cells(real.device, 8) == fused_grns.DEVICE_BLOCK_ELEMENTS // 16


def _run(grns: VariableGRNs, z: torch.Tensor, w: torch.Tensor, seed: int) -> list[torch.Tensor]:
    """Output and every gradient of one training-mode forward and backward."""
    grns.zero_grad()
    w = w.detach().requires_grad_()
    z = z.detach().requires_grad_()
    torch.manual_seed(seed)  # the same dropout mask on both paths
    out = grns(z, grns.input_weight(), w)
    (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
    grads = [p.grad for p in grns.parameters()]
    assert all(g is not None for g in grads)
    return [out.detach(), w.grad, z.grad, *grads]  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("n", "d_in", "g", "d", "rows"),
    [(7, 4, 4, 8, 33), (220, 16, 16, 64, 128), (3, 8, 8, 8, 5)],  # last: identity skip
)
def test_kernel_equals_aten_with_dropout(
    monkeypatch: pytest.MonkeyPatch,
    require_kernel: RequireKernel,
    n: int,
    d_in: int,
    g: int,
    d: int,
    rows: int,
) -> None:
    require_kernel(grn_cells.load(), "the grn_cells kernel")
    torch.manual_seed(0)
    grns = VariableGRNs(n, d_in, g, d, dropout=0.3).train()
    x = torch.randn(n, rows, d_in) * 2
    z = torch.cat([x, torch.ones(n, rows, 1)], dim=-1)  # [xi, 1]
    w = torch.softmax(torch.randn(rows, n), dim=-1)
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "1")
    with_kernel = _run(grns, z, w, seed=5)
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "0")
    with_aten = _run(grns, z, w, seed=5)
    for i, (a, b) in enumerate(zip(with_kernel, with_aten, strict=True)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=f"tensor {i}")


@pytest.mark.parametrize("where", ["gate", "value"])
def test_kernel_propagates_nan(
    monkeypatch: pytest.MonkeyPatch, require_kernel: RequireKernel, where: str
) -> None:
    """A NaN weight must give a NaN output (the trainer skips non-finite losses), not a
    number: the kernel's exp clamps its argument, and a NaN must not be clamped."""
    require_kernel(grn_cells.load(), "the grn_cells kernel")
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "1")
    torch.manual_seed(0)
    grns = VariableGRNs(3, 4, 4, 8, dropout=0.0).eval()
    column = 8 + 2 if where == "gate" else 2  # glu_weight columns: [values (8) | gates (8)]
    with torch.no_grad():
        grns.glu_weight[1, :, column] = float("nan")
    z = torch.cat([torch.randn(3, 5, 4), torch.ones(3, 5, 1)], dim=-1)
    out = grns(z, grns.input_weight(), torch.full((5, 3), 1 / 3))
    assert torch.isnan(out).any()


@pytest.mark.parametrize(("n", "rows"), [(7, 33), (5, 1000)])  # tile remainders; a long sum
def test_kernel_is_bit_identical_at_any_thread_count(
    monkeypatch: pytest.MonkeyPatch, require_kernel: RequireKernel, n: int, rows: int
) -> None:
    """Output and every gradient, the LayerNorm bias's included: no sum in the op is split
    by thread (grn_cells.cpp splits rows in whole tiles, gradients by variable), so the count
    changes nothing (docs/performance.md, "Threads")."""
    require_kernel(grn_cells.load(), "the grn_cells kernel")
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "1")
    torch.manual_seed(0)
    grns = VariableGRNs(n, 4, 8, 16, dropout=0.3).train()
    z = torch.cat([torch.randn(n, rows, 4), torch.ones(n, rows, 1)], dim=-1)
    w = torch.softmax(torch.randn(rows, n), dim=-1)
    before = torch.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            results.append(_run(grns, z, w, seed=5))
    finally:
        torch.set_num_threads(before)
    for other in results[1:]:
        for i, (a, b) in enumerate(zip(results[0], other, strict=True)):
            assert torch.equal(a, b), f"tensor {i} differs"
