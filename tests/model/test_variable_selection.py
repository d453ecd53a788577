"""The fused VariableSelectionNetwork against the plain per-variable reference."""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import ModuleType

import pytest
import torch

from foxhunt.model import fused_grns, grn_cells
from foxhunt.model.reference import (
    ReferenceVariableSelectionNetwork,
    copy_fast_to_reference,
    copy_reference_to_fast,
)
from foxhunt.model.variable_grns import VariableGRNs, _carry_one, _with_bias
from foxhunt.model.variable_selection import VariableSelectionNetwork

CASES = {
    # name: (num_real, cardinalities, variable_size, hidden, steps or None for static)
    "temporal": (9, (), 4, 8, 5),
    "static_mixed": (3, (4, 2), 4, 8, None),
    "categorical_only": (0, (3,), 4, 8, None),
    "identity_skip": (5, (), 8, 8, 3),  # variable_size == hidden: per-variable skip is identity
    "scalar_embedding": (4, (2,), 1, 8, None),  # n * d == n: selection skip is identity
}


def build(case: str, dtype: torch.dtype, context: bool = True):
    n_real, cards, d, h, steps = CASES[case]
    kwargs = {"variable_size": d, "hidden_size": h, "dropout": 0.1}
    kwargs["context_size"] = 6 if context else None
    torch.manual_seed(0)
    ref = ReferenceVariableSelectionNetwork(n_real, cards, **kwargs).to(dtype).eval()
    fast = VariableSelectionNetwork(n_real, cards, **kwargs).to(dtype).eval()
    copy_reference_to_fast(ref, fast)
    g = torch.Generator().manual_seed(1)
    lead = (3, steps) if steps else (3,)
    real = torch.randn(*lead, n_real, generator=g, dtype=dtype)
    codes = None
    if cards:
        codes = torch.stack([torch.randint(0, c, lead, generator=g) for c in cards], dim=-1)
    ctx = torch.randn(3, 6, generator=g, dtype=dtype) if context else None
    return ref, fast, (real, codes, ctx)


@pytest.fixture(autouse=True)
def tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Force several (variable, row) blocks so that the blocked loops are exercised."""
    monkeypatch.setattr(fused_grns, "BLOCK_ELEMENTS_PER_THREAD", 16)


@pytest.fixture(params=["kernel", "aten"])
def fused_path(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    require_kernel: Callable[[ModuleType | None, str], ModuleType],
) -> str:
    """Run a test with the C++ kernel (grn_cells.cpp) and with the ATen path."""
    if request.param == "kernel":
        require_kernel(grn_cells.load(), "the grn_cells kernel")
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "1" if request.param == "kernel" else "0")
    return str(request.param)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("case", list(CASES))
def test_fast_equals_reference_forward_and_gradients(
    case: str, dtype: torch.dtype, fused_path: str
) -> None:
    ref, fast, (real, codes, ctx) = build(case, dtype)
    out_ref, w_ref = ref(real, codes, ctx)
    out_fast, w_fast = fast(real, codes, ctx)
    torch.testing.assert_close(out_fast, out_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w_fast, w_ref, atol=1e-5, rtol=1e-5)

    g = torch.Generator().manual_seed(2)
    grad_out = torch.randn(out_ref.shape, generator=g, dtype=dtype)
    grad_w = torch.randn(w_ref.shape, generator=g, dtype=dtype)
    torch.autograd.backward([out_ref, w_ref], [grad_out, grad_w])
    torch.autograd.backward([out_fast, w_fast], [grad_out, grad_w])
    fast_grads = fast_grads_in_reference_layout(fast, ref)
    for name, p in ref.named_parameters():
        assert p.grad is not None, name
        torch.testing.assert_close(fast_grads[name], p.grad, atol=1e-5, rtol=1e-5, msg=name)


def fast_grads_in_reference_layout(
    fast: VariableSelectionNetwork, ref: ReferenceVariableSelectionNetwork
) -> dict[str, torch.Tensor]:
    """The fast module's gradients, moved into the reference's parameter layout."""
    holder, out = copy.deepcopy(fast), copy.deepcopy(ref)
    with torch.no_grad():
        for p, q in zip(fast.parameters(), holder.parameters(), strict=True):
            assert p.grad is not None
            q.copy_(p.grad)
    copy_fast_to_reference(holder, out)
    return dict(out.named_parameters())


def test_weights_are_a_distribution_per_step() -> None:
    _, fast, (real, codes, ctx) = build("temporal", torch.float32)
    _, weights = fast(real, codes, ctx)
    assert weights.shape == (3, 5, 9)
    assert (weights >= 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 5))


def test_without_context() -> None:
    ref, fast, (real, codes, _) = build("static_mixed", torch.float64, context=False)
    torch.testing.assert_close(fast(real, codes)[0], ref(real, codes)[0])


def test_copy_round_trip_is_exact() -> None:
    ref, fast, _ = build("static_mixed", torch.float32)
    back = copy.deepcopy(ref)
    for p in back.parameters():
        torch.nn.init.zeros_(p)
    copy_fast_to_reference(fast, back)
    for (name, p), q in zip(ref.named_parameters(), back.parameters(), strict=True):
        assert torch.equal(p, q), name


def test_blocking_does_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    _, fast, (real, codes, ctx) = build("temporal", torch.float64)
    blocked = fast(real, codes, ctx)[0]
    monkeypatch.setattr(fused_grns, "BLOCK_ELEMENTS_PER_THREAD", 1 << 30)
    torch.testing.assert_close(fast(real, codes, ctx)[0], blocked, atol=1e-12, rtol=1e-12)


def test_a_drawn_mask_gives_the_same_result_in_blocks_as_in_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The GPU's way (a bool keep mask drawn whole, sliced per block) on the ATen path."""
    torch.manual_seed(0)
    n, rows, g, d = 5, 7, 3, 4
    grns = VariableGRNs(n, 2, g, d, dropout=0.5).double()
    z = torch.nn.functional.pad(torch.randn(n, rows, 2, dtype=torch.float64), (0, 1), value=1.0)
    weights = torch.rand(rows, n, dtype=torch.float64)
    keep = grns.dropout.keep_mask((n, rows, g), z.device)
    assert 0 < int(keep.sum()) < keep.numel()
    params = (grns.input_weight(), *_stacked(grns))

    def run(cells: int) -> list[torch.Tensor]:
        monkeypatch.setattr(fused_grns, "_cells", lambda *_: cells)
        inputs = [t.detach().requires_grad_() for t in (z, weights, *params)]
        z_, w_, *p_ = inputs
        out = fused_grns.grn_cells_op(z_, w_, *p_, None, grns.dropout.keep_threshold, keep)
        (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
        return [out.detach(), *(t.grad for t in inputs)]  # type: ignore[misc]

    whole, blocked = run(n * rows), run(4)  # blocks of 1 variable x 4 rows, ragged
    for a, b in zip(blocked, whole, strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)


def _stacked(grns: VariableGRNs) -> tuple[torch.Tensor, ...]:
    """fc2, glu (dropout's rescaling folded in), norm weight and bias as the op takes them."""
    fc2 = _with_bias(grns.fc2_weight, grns.fc2_bias)
    fc2 = torch.cat([fc2, _carry_one(fc2, 1)], dim=-1)
    glu = _with_bias(grns.glu_weight / grns.dropout.keep_probability, grns.glu_bias)
    return fc2, glu, grns.norm_weight, grns.norm_bias


@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_fused_op_passes_gradcheck(dropout: float) -> None:
    torch.manual_seed(0)
    grns = VariableGRNs(3, 2, 2, 4, dropout=dropout).double()
    embedded = torch.randn(3, 5, 2, dtype=torch.float64, requires_grad=True)
    weights = torch.rand(5, 3, dtype=torch.float64, requires_grad=True)

    def run(*_: torch.Tensor) -> torch.Tensor:
        z = torch.nn.functional.pad(embedded, (0, 1), value=1.0)  # [xi, 1]
        torch.manual_seed(1)  # the same dropout mask at every evaluation
        return grns(z, grns.input_weight(), weights)

    assert torch.autograd.gradcheck(run, [embedded, weights, *grns.parameters()])


def test_dropout_follows_train_and_eval() -> None:
    _, fast, (real, codes, ctx) = build("temporal", torch.float32)
    eval_out = fast(real, codes, ctx)[0]
    fast.train()
    torch.manual_seed(3)
    first = fast(real, codes, ctx)[0]
    torch.manual_seed(3)
    again = fast(real, codes, ctx)[0]
    assert torch.equal(first, again)  # the global RNG drives every mask
    assert not torch.allclose(first, eval_out)
    fast.eval()
    assert torch.equal(fast(real, codes, ctx)[0], eval_out)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fast_equals_reference_at_the_reference_size(
    monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype, fused_path: str
) -> None:
    """220 past variables, d_var 16, hidden 64, default (cache-sized) blocks."""
    monkeypatch.setattr(fused_grns, "BLOCK_ELEMENTS_PER_THREAD", 1 << 18)
    kwargs = {"variable_size": 16, "hidden_size": 64, "dropout": 0.1, "context_size": 64}
    torch.manual_seed(0)
    ref = ReferenceVariableSelectionNetwork(220, **kwargs).to(dtype).eval()
    fast = VariableSelectionNetwork(220, **kwargs).to(dtype).eval()
    copy_reference_to_fast(ref, fast)
    real, ctx = torch.randn(2, 64, 220, dtype=dtype), torch.randn(2, 64, dtype=dtype)
    outputs = [net(real, None, ctx) for net in (ref, fast)]
    for ref_t, fast_t in zip(*outputs, strict=True):
        torch.testing.assert_close(fast_t, ref_t, atol=1e-5, rtol=1e-5)
    for out, weights in outputs:
        (out.square().sum() + weights.square().sum()).backward()
    fast_grads = fast_grads_in_reference_layout(fast, ref)
    for name, p in ref.named_parameters():
        assert p.grad is not None, name
        torch.testing.assert_close(fast_grads[name], p.grad, atol=1e-5, rtol=1e-5, msg=name)
