"""After training: the best other base's calibrated head, served when it beats the kept model
(`TrainingConfig.head_fallback`).

The network learns the planted drivers best on the rolling base (docs/forecasting.md), but on
a market with nothing to learn the gate keeps that base's head, and the rolling RMS is not the
best volatility forecast everywhere (GARCH-t's is on a GARCH market). So before training each
other base of `baselines.base.CANDIDATES` gets a head of its own, calibrated on the training
windows as the model's is (`calibrate_baseline`), and scored window by window on the same
validation windows; the best of them is kept, with the run's windows rebased onto it. After
training it replaces the kept model when

- the kept model is the training base's own head (the gate kept the initial weights): by its
  mean loss, as `--base auto` chooses a base;
- the kept model is a trained network: with `initial_confidence`, the gate's own test (a
  day-block bootstrap of the paired per-window losses), so that neither side wins on noise.

The served model is then the network at its initial weights (its correction exactly zero) with
that head's calibration: the forecast a `--base NAME` run whose gate kept the head would make,
saved the same way (preprocessor.json holds the base, baseline.json its fitted filter).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np
from torch import Tensor, nn

from foxhunt.baselines.base import CANDIDATES
from foxhunt.data import PreparedData
from foxhunt.data.rebase import BaseUnavailable, base_rows, with_base
from foxhunt.jobs.base import BaseChoice, candidate
from foxhunt.model.baseline_head import BaselineQuantiles
from foxhunt.runs import RunConfig
from foxhunt.scoring import RunBaselines
from foxhunt.task import bp_per_unit, window_losses
from foxhunt.task.bootstrap import share_below_zero
from foxhunt.training.calibrate import calibrate_baseline, head_forecasts
from foxhunt.training.selection import window_blocks

log = logging.getLogger("foxhunt.train")


@dataclass(frozen=True, kw_only=True)
class HeadFallback:
    """The best other base's calibrated head, ready to be served.

    name: its base; data: the run's windows rebased onto it (inputs shared, not copied);
    head: its calibration (`BaselineQuantiles`' state); losses: its per-window validation
    losses (scaled units).
    """

    name: str
    data: PreparedData
    head: dict[str, Tensor]
    losses: np.ndarray


class _Holder(nn.Module):
    """What `calibrate_baseline` calibrates: a module with a `baseline` head."""

    def __init__(self, head: BaselineQuantiles) -> None:
        super().__init__()
        self.baseline = head


def prepare_fallback(
    config: RunConfig, data: PreparedData, baselines: RunBaselines, trained_base: str
) -> tuple[dict[str, float | None], HeadFallback | None]:
    """The candidate heads calibrated and scored on validation, before training (`data` must
    still hold its encoded bars): each one's mean validation loss (bp; None: unfitted) and
    the best other one, or None when none beats the training base's own head on validation
    (then none can be served)."""
    model, training = config.model, config.training
    quantiles, inputs = model.quantiles, model.inputs  # completed from the data
    if not len(data.validation) or not len(data.train):
        return {}, None
    unit = bp_per_unit(data.preprocessor)
    scored: dict[str, tuple[float, HeadFallback]] = {}
    means_bp: dict[str, float | None] = {}
    for name in CANDIDATES:
        try:
            pre = candidate(data.preprocessor, name, baselines)
            rebased = with_base(data, pre, base_rows(data, pre))
        except BaseUnavailable as exc:
            log.info("head fallback: base %s skipped: %s", name, exc)
            means_bp[name] = None
            continue
        head = BaselineQuantiles(
            quantiles,
            inputs.horizon,
            learn_spread=bool(model.learn_spread),
            signals=inputs.vol_signals,
        )
        if training.calibrate:
            calibrate_baseline(
                _Holder(head),
                rebased.train,
                quantiles,
                loss_weighting=training.loss_weighting,
                validation=rebased.validation,
            )
        pred, target = head_forecasts(head, rebased.validation)
        losses = window_losses(pred.numpy(), target.numpy(), quantiles)
        mean = float(losses.mean())
        means_bp[name] = mean * unit
        log.info(
            "head fallback: base %s's head: %.4f bp on the validation windows", name, mean * unit
        )
        if name != trained_base:
            state = {k: v.detach().clone() for k, v in head.state_dict().items()}
            fallback = HeadFallback(name=name, data=rebased, head=state, losses=losses)
            scored[name] = (mean, fallback)
    own = means_bp.get(trained_base)
    if not scored or own is None:
        return means_bp, None
    best_mean, best = min(scored.values(), key=lambda item: item[0])
    if best_mean * unit >= own:
        log.info("head fallback: no other base's head beats %s's on validation", trained_base)
        return means_bp, None
    return means_bp, best


@dataclass(frozen=True, kw_only=True)
class Served:
    """What the fallback decided: `base`, the choice to record (None: no fallback was
    prepared), and `head`, the base whose head replaced the kept model (None: it stands)."""

    base: BaseChoice | None
    data: PreparedData
    head: str | None


def fall_back(
    config: RunConfig,
    model: nn.Module,
    initial: dict[str, Tensor],
    kept: np.ndarray,
    *,
    trained: bool,
    fallback: HeadFallback,
    base: BaseChoice,
    data: PreparedData,
) -> Served:
    """Replace the kept model (its per-window validation losses `kept`; `trained`: a trained
    network, not the initial weights) with `fallback`'s head when it wins; `model` is then
    loaded in place with the `initial` weights and the head's calibration."""
    blocks = window_blocks(data.validation)
    confidence = config.training.initial_confidence
    if trained:
        sure = share_below_zero(fallback.losses - kept, blocks)
        wins = sure >= confidence
        why = f"beats the trained network in {100 * sure:.0f}% of day resamples (need {100 * confidence:.0f}%)"
    else:
        wins = bool(fallback.losses.mean() < kept.mean())
        why = (
            "has a lower mean validation loss than the kept head"
            if wins
            else "does not beat the kept head"
        )
    log.info(
        "head fallback: base %s's head %s: %s",
        fallback.name,
        why,
        "served" if wins else "not served",
    )
    if not wins:
        return Served(base=base, data=data, head=None)
    model.load_state_dict(initial)
    head = getattr(model, "baseline", None)
    assert isinstance(head, BaselineQuantiles)
    head.load_state_dict(fallback.head)
    served = replace(base, name=fallback.name, trained_on=base.name)
    return Served(base=served, data=fallback.data, head=fallback.name)
