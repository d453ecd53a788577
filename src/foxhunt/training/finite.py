"""Non-finite weights end training: a finite loss does not prove the step that followed it
left finite weights (an overflowing update, a huge --lr), and a NaN model must never be
evaluated, checkpointed as best or saved."""

from __future__ import annotations

import torch
from torch import nn

from foxhunt.errors import FoxhuntError


class NonFiniteWeights(FoxhuntError):
    """An optimizer step produced NaN or inf parameters."""


def check_finite_weights(model: nn.Module, step: int) -> None:
    params = [p for p in model.parameters() if p.is_floating_point()]
    if not params:
        return
    flags = torch.stack([torch.isfinite(p.detach()).all() for p in params])
    if bool(flags.all()):  # one device sync per step
        return
    bad = next(n for n, p in model.named_parameters() if not torch.isfinite(p.detach()).all())
    raise NonFiniteWeights(
        f"training diverged: parameter {bad} is NaN or inf after optimizer step {step + 1}; "
        "nothing of this run was saved as final; lower --lr, keep --grad-clip > 0 or check "
        "the input data"
    )
