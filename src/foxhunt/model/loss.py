"""Quantile (pinball) loss, eq. 24 of the paper, averaged instead of summed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

#: Floor on the scale that divides the loss: a flat stretch of prices must not weigh infinitely.
MIN_SCALE = 1e-3


def pinball(error: Tensor, q: Tensor | float) -> Tensor:
    """The pinball loss of each element (eq. 24's summand): max(q * e, (q - 1) * e) for the
    error e = target - forecast at quantile level q (broadcast against ``error``). The one
    place the formula is written; the numpy scoring calls it in float64 (``foxhunt.task``)."""
    return torch.maximum(q * error, (q - 1) * error)


def quantile_loss_per_quantile(
    pred: Tensor, target: Tensor, quantiles: Sequence[float], scale: Tensor | None = None
) -> Tensor:
    """Pinball loss of each quantile, averaged over batch and horizon.

    pred [B, H, Q], target [B, H] -> [Q]. For level q and error e = target - pred the loss
    is max(q * e, (q - 1) * e). With `scale` [B, H] each window's error is divided by it
    first: pinball is positively homogeneous, so that is the loss of the standardized
    forecast pred / scale, and calm and wild windows weigh alike.
    """
    if pred.dim() != 3 or pred.shape[-1] != len(quantiles):
        raise ValueError(
            f"pred: expected shape [B, H, {len(quantiles)}] (one column per quantile), "
            f"got {list(pred.shape)}"
        )
    if tuple(target.shape) != tuple(pred.shape[:2]):
        raise ValueError(
            f"target: expected shape {list(pred.shape[:2])} to match pred [B, H, Q], "
            f"got {list(target.shape)}"
        )
    q = torch.as_tensor(quantiles, dtype=pred.dtype, device=pred.device)  # [Q]
    error = target.unsqueeze(-1) - pred  # [B, H, Q]
    if scale is not None:
        error = error / scale.clamp_min(MIN_SCALE).unsqueeze(-1)
    return pinball(error, q).mean(dim=(0, 1))


def quantile_loss(
    pred: Tensor, target: Tensor, quantiles: Sequence[float], scale: Tensor | None = None
) -> Tensor:
    """Pinball loss averaged over batch, horizon and quantiles: a scalar (see above for
    `scale`)."""
    return quantile_loss_per_quantile(pred, target, quantiles, scale).mean()


def range_loss(
    log_volatility: Tensor,
    scale: Tensor,
    log_range: Tensor,
    *,
    across: Callable[[Tensor], Tensor] | None = None,
    shares: int = 1,
) -> Tensor:
    """Huber loss (delta 1) of how far the network's volatility misses each target bar's
    range, on the log scale: a scalar.

    log_volatility [B, H]: the network's log-volatility adjustment s over the base; scale
    [B, H]: the base's; log_range [B, H]: log of each target bar's log(high / low), NaN where
    none. A bar's range is its volatility times a factor (wicks, ticks, bar length) whose
    level the model need not know, so the residual log_range - log(scale) - log_volatility is
    taken about its mean over the batch, per horizon step: only how it varies across windows
    trains the volatility. The range is a far less noisy measure of a bar's volatility than
    its return (Parkinson 1980; Alizadeh, Brandt and Diebold 2002), which is all the pinball
    loss sees. The mean stays in the gradient: it takes out of every window's gradient the
    batch's common push (the Huber loss clips the long tails unevenly), so the range loss
    never moves the level of the volatility, which the pinball loss sets (held fixed, it did:
    the README run closed 34% of the gap instead of 66%).

    Under data parallelism each of `shares` processes holds a part of the global batch:
    `across` sums a tensor over them (a differentiable all-reduce), so the mean and the count
    are the global batch's and the processes' averaged gradients are one process's on the
    whole batch.
    """
    residual = log_range - scale.clamp_min(MIN_SCALE).log() - log_volatility  # [B, H]
    valid = residual.isfinite()
    kept = torch.where(valid, residual, torch.zeros_like(residual))
    sums = torch.stack([kept.sum(dim=0), valid.sum(dim=0).to(kept.dtype)])  # [2, H]
    if across is not None:
        sums = across(sums)
    mean = sums[0] / sums[1].clamp_min(1)  # [H]
    centred = torch.where(valid, kept - mean, torch.zeros_like(kept))
    losses = torch.nn.functional.huber_loss(centred, torch.zeros_like(centred), reduction="none")
    return losses.sum() * shares / sums[1].sum().clamp_min(1)
