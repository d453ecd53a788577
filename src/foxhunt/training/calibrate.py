"""Before the first epoch: fit the baseline output's few calibration weights on train.

The "baseline" output has a handful of parameters outside the network: the weight of the
fast-volatility signal and, with `learn_spread`, a log-spread per horizon step and quantile
(model/baseline_head.py). SGD on mini-batches moves them slowly and noisily while the whole
network trains; but with the network's correction at zero (its initial value) the loss is a
smooth function of those few numbers alone, so full-batch L-BFGS over every training window
fits them in a second, deterministically. The model then starts from a calibrated log-linear
volatility forecast, which `validate_initial` holds as the candidate the trained epochs must
beat on validation. A fit that raises the validation loss is dropped: the model then starts at
its base's Gaussian quantiles, so (with `validate_initial`) it is never worse on validation
than its base, the best volatility baseline on validation under `--base auto`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.data import Dataset

from foxhunt.batch import TFTBatch
from foxhunt.model.baseline_head import BaselineQuantiles
from foxhunt.model.loss import quantile_loss
from foxhunt.training.inference import sequential_batches

log = logging.getLogger("foxhunt.train")


def calibration_parameters(head: BaselineQuantiles) -> list[nn.Parameter]:
    return [p for p in (head.signal_weight, head.log_spread) if p is not None]


def _gather(dataset: Dataset[TFTBatch]) -> tuple[Tensor, Tensor | None, Tensor]:
    scales, signals, targets = [], [], []
    for batch in sequential_batches(dataset, 4096):
        assert batch.scale is not None and batch.target is not None
        scales.append(batch.scale)
        targets.append(batch.target)
        if batch.vol_signal is not None:
            signals.append(batch.vol_signal)
    signal = torch.cat(signals).double() if signals else None
    return torch.cat(scales).double(), signal, torch.cat(targets).double()


def _head_loss(
    dataset: Dataset[TFTBatch], quantiles: Sequence[float], loss_weighting: str
) -> Callable[[nn.Module], Tensor]:
    """The float64 head's quantile loss over every window of `dataset`, the network's
    correction held at zero."""
    scale, signal, target = _gather(dataset)
    weight = scale if loss_weighting == "inverse_scale" else None
    zero = torch.zeros(*target.shape, len(quantiles), dtype=torch.float64)
    return lambda head: quantile_loss(head(zero, scale, signal), target, quantiles, weight)


def head_forecasts(head: BaselineQuantiles, dataset: Dataset[TFTBatch]) -> tuple[Tensor, Tensor]:
    """The head alone on every window of `dataset`: quantile forecasts [N, H, Q] with the
    network's correction at zero (what a model at its initial weights forecasts; float64)
    and the targets [N, H]."""
    scale, signal, target = _gather(dataset)
    zero = torch.zeros(*target.shape, len(head.z), dtype=torch.float64)
    work = head.double()
    try:
        with torch.no_grad():
            return work(zero, scale, signal), target
    finally:
        head.float()


def calibrate_baseline(
    model: nn.Module,
    dataset: Dataset[TFTBatch],
    quantiles: Sequence[float],
    *,
    loss_weighting: str = "none",
    validation: Dataset[TFTBatch] | None = None,
) -> dict[str, Any] | None:
    """Fit the baseline head's calibration parameters in place (float64 L-BFGS, the network's
    correction held at zero); a history record of what changed, or None if there is nothing
    to fit. A fit that does not lower the training loss, or raises the loss on `validation`,
    leaves the parameters at zero."""
    head = getattr(model, "baseline", None)
    if not isinstance(head, BaselineQuantiles) or len(dataset) == 0:  # type: ignore[arg-type]
        return None
    params = calibration_parameters(head)
    if not params:
        return None
    train_loss = _head_loss(dataset, quantiles, loss_weighting)
    work = head.double()  # a float64 fit: the same answer on every CPU and thread count
    held_out: tuple[float, float] | None = None
    try:

        def loss() -> Tensor:
            return train_loss(work)

        with torch.no_grad():
            before = float(loss())
        _lbfgs(params, loss)
        with torch.no_grad():
            after = float(loss())
            if not math.isfinite(after) or after > before:
                log.warning("calibration did not lower the training loss; left at zero")
                for p in params:
                    p.zero_()
                after = before
        for p in params:
            p.grad = None
        held_out = _validation_losses(work, params, validation, quantiles, loss_weighting)
        if held_out is not None and held_out[1] > held_out[0]:
            _drop_fit(params, held_out)
            after = before
    finally:
        head.float()
    record: dict[str, Any] = {"event": "calibration", "train_loss_before": before}
    record["train_loss_after"] = after
    if held_out is not None:
        record["val_loss_before"], record["val_loss_fitted"] = held_out
    if head.signal_weight is not None:
        record["signal_weight"] = head.signal_weight.detach().tolist()
    if head.log_spread is not None:
        record["log_spread"] = head.log_spread.detach().tolist()
    log.info("calibrated the baseline output on train: loss %.5f -> %.5f", before, after)
    return record


def _validation_losses(
    head: BaselineQuantiles,
    params: list[nn.Parameter],
    validation: Dataset[TFTBatch] | None,
    quantiles: Sequence[float],
    loss_weighting: str,
) -> tuple[float, float] | None:
    """(loss at zero, loss as fitted) of the float64 head on `validation`; None without one."""
    if validation is None or len(validation) == 0:  # type: ignore[arg-type]
        return None
    loss = _head_loss(validation, quantiles, loss_weighting)
    with torch.no_grad():
        fitted = float(loss(head))
        saved = [p.detach().clone() for p in params]
        for p in params:
            p.zero_()
        base = float(loss(head))
        for p, value in zip(params, saved, strict=True):
            p.copy_(value)
    return base, fitted


def _lbfgs(params: list[nn.Parameter], loss: Callable[[], Tensor]) -> None:
    optimizer = torch.optim.LBFGS(
        params, lr=1.0, max_iter=200, tolerance_change=1e-12, line_search_fn="strong_wolfe"
    )

    def closure() -> Tensor:
        optimizer.zero_grad()
        value = loss()
        value.backward()
        return value

    optimizer.step(closure)


def _drop_fit(params: list[nn.Parameter], held_out: tuple[float, float]) -> None:
    log.warning(
        "calibration raised the validation loss (%.5f -> %.5f); left at zero: the model "
        "starts at its base's Gaussian quantiles",
        *held_out,
    )
    with torch.no_grad():
        for p in params:
            p.zero_()
