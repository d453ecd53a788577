"""Does a checkpointing transform give exactly the gradients of plain training?

The check compares every parameter's gradient after one forward + backward without and with
the transform, from the same RNG state (so dropout draws the same masks). It reports
parameters whose gradient differs, and parameters that plain training gives a gradient but
the transformed model does not: what a ``.detach()`` posing as checkpointing does to every
parameter upstream of the detached segment.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from foxhunt.model.checkpointing import Policy, apply_checkpointing, remove_checkpointing

Gradients = dict[str, Tensor | None]


def parameter_gradients(
    model: nn.Module, loss_fn: Callable[[], Tensor], seed: int = 0
) -> Gradients:
    """Each parameter's gradient after one backward of ``loss_fn()`` from ``seed``."""
    model.zero_grad(set_to_none=True)
    with torch.random.fork_rng(devices=_cuda_devices(model)):
        torch.manual_seed(seed)
        loss_fn().backward()
    grads = {
        name: None if p.grad is None else p.grad.detach().clone()
        for name, p in model.named_parameters()
    }
    model.zero_grad(set_to_none=True)
    return grads


def gradient_mismatches(
    reference: Gradients, candidate: Gradients, rtol: float = 1e-6
) -> list[str]:
    """One message per parameter whose gradient is missing or differs by more than ``rtol``
    (relative to the reference gradient's norm); empty when the two agree."""
    problems = []
    for name, ref in reference.items():
        got = candidate.get(name)
        if ref is None:
            if got is not None and bool(got.ne(0).any()):
                problems.append(f"{name}: a gradient where plain training gives none")
            continue
        if got is None:
            problems.append(f"{name}: no gradient (plain training gives one: is the graph cut?)")
            continue
        diff = _relative_difference(ref, got)
        if not diff <= rtol:  # also catches NaN
            problems.append(f"{name}: gradient differs, relative difference {diff:.3g} > {rtol:g}")
    return problems


def check_checkpointing(
    model: nn.Module,
    loss_fn: Callable[[], Tensor],
    policy: Policy | Callable[[nn.Module], object],
    *,
    seed: int = 0,
    rtol: float = 1e-6,
) -> list[str]:
    """Gradient mismatches of ``policy`` (a checkpointing policy, or any transform of the
    model) against plain training; the model is left without checkpointing."""
    model.train()
    remove_checkpointing(model)
    reference = parameter_gradients(model, loss_fn, seed)
    if callable(policy):
        policy(model)
    else:
        apply_checkpointing(model, policy)
    try:
        return gradient_mismatches(reference, parameter_gradients(model, loss_fn, seed), rtol)
    finally:
        remove_checkpointing(model)


def _relative_difference(ref: Tensor, got: Tensor) -> float:
    if ref.shape != got.shape:
        return float("inf")
    scale = ref.double().norm().item()
    err = (got.double() - ref.double()).norm().item()
    return err / scale if scale > 0 else err


def _cuda_devices(model: nn.Module) -> list[int]:
    return sorted({p.device.index or 0 for p in model.parameters() if p.device.type == "cuda"})
