"""Non-finite weights end training: a finite loss does not prove the step that followed it
left finite weights (an overflowing update, a huge --lr), and a NaN model must never be
evaluated, checkpointed as best or saved."""

from __future__ import annotations

import math

import numpy as np
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


def check_finite_validation(val_loss: float, windows: int, epoch: int) -> None:
    """Finite weights can still give NaN forecasts (huge weights overflow the forward): a
    NaN validation loss on real windows means the model is unusable, not "no improvement"."""
    if windows and not math.isfinite(val_loss):
        raise NonFiniteWeights(
            f"training diverged: the validation loss of epoch {epoch + 1} is {val_loss} (the "
            "model's forecasts are not finite); lower --lr or keep --grad-clip > 0"
        )


def check_finite_forecasts(pred: np.ndarray, what: str) -> None:
    if not np.isfinite(pred).all():
        raise NonFiniteWeights(
            f"the trained model's {what} forecasts are not finite; the run was not saved; "
            "lower --lr or check the input data"
        )
