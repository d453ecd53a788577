"""The range loss: the forecast's volatility against each target bar's range (model/loss.py)."""

import math
from dataclasses import replace

import torch

from foxhunt.model.loss import quantile_loss, range_loss
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.task import batch_loss
from helpers import make_batch
from helpers import small_model as small_config


def test_a_volatility_that_tracks_the_ranges_up_to_a_level_costs_nothing() -> None:
    torch.manual_seed(0)
    scale = torch.rand(8, 3) + 0.5
    log_vol = torch.randn(8, 3)
    level = torch.tensor([-1.0, 0.3, 2.0])  # per step: wicks, ticks, bar length
    ranges = scale.log() + log_vol + level
    assert range_loss(log_vol, scale, ranges) < 1e-10
    assert range_loss(torch.zeros(8, 3), scale, ranges) > 0.1


def test_bars_without_a_range_are_left_out() -> None:
    torch.manual_seed(1)
    scale, log_vol = torch.rand(6, 2) + 0.5, torch.randn(6, 2, requires_grad=True)
    ranges = torch.randn(6, 2)
    holed = ranges.clone()
    holed[2:, 1] = float("nan")  # step 2 keeps rows 0, 1 only
    loss = range_loss(log_vol, scale, holed)
    loss.backward()
    assert log_vol.grad is not None and torch.isfinite(log_vol.grad).all()
    assert (log_vol.grad[2:, 1] == 0).all()
    residual = ranges - scale.log() - log_vol.detach()
    step1 = residual[:, 0] - residual[:, 0].mean()
    step2 = residual[:2, 1] - residual[:2, 1].mean()
    huber = torch.nn.functional.huber_loss
    expected = (
        huber(step1, 0 * step1, reduction="sum") + huber(step2, 0 * step2, reduction="sum")
    ) / 8
    torch.testing.assert_close(loss.detach(), expected)


def test_wider_ranges_pull_their_windows_volatility_up() -> None:
    scale = torch.ones(4, 1)
    log_vol = torch.zeros(4, 1, requires_grad=True)
    ranges = torch.tensor([[0.0], [0.0], [math.log(3)], [math.log(3)]])
    range_loss(log_vol, scale, ranges).backward()
    assert log_vol.grad is not None
    assert (log_vol.grad[:2] > 0).all() and (log_vol.grad[2:] < 0).all()  # descent: down, up


def test_the_training_loss_adds_the_weighted_range_loss_to_the_pinball_loss() -> None:
    cfg = small_config(output="baseline", dropout=0.0)
    torch.manual_seed(2)
    model = TemporalFusionTransformer(cfg)
    with torch.no_grad():
        model.output_head.weight.normal_(0, 0.1)  # a log volatility that varies
    batch = make_batch(cfg)
    assert batch.target is not None and batch.scale is not None
    ranges = torch.randn_like(batch.target)
    out = model(batch)
    assert out.log_volatility is not None and out.log_volatility.shape == batch.target.shape
    pinball = quantile_loss(out.quantiles, batch.target, cfg.quantiles)
    ranged = range_loss(out.log_volatility, batch.scale, ranges)
    with_ranges = replace(batch, target_range=ranges)
    torch.testing.assert_close(batch_loss(model, with_ranges, cfg.quantiles), pinball)
    torch.testing.assert_close(batch_loss(model, batch, cfg.quantiles, range_weight=2.0), pinball)
    torch.testing.assert_close(
        batch_loss(model, with_ranges, cfg.quantiles, range_weight=2.0), pinball + 2 * ranged
    )


def test_a_direct_model_has_no_volatility_to_train() -> None:
    cfg = small_config()
    out = TemporalFusionTransformer(cfg)(make_batch(cfg))
    assert out.log_volatility is None


def test_the_range_loss_trains_the_network_not_the_lean_toward_the_fast_volatility() -> None:
    """The range loss reaches the network's own log scale s; the weight of the fast signal
    (a linear lean the calibration fits) learns from the pinball loss alone: trained by the
    ranges too, it kept its share and the network learned only the rest (the planted seeds
    closed 69-79% of the gap that way, 78-90% this way; docs/forecasting.md)."""
    cfg = small_config(output="baseline", dropout=0.0, vol_signals=1)
    model = TemporalFusionTransformer(cfg)
    assert model.baseline is not None and model.baseline.signal_weight is not None
    with torch.no_grad():
        model.output_head.weight.normal_(0, 0.1)
    batch = make_batch(cfg)
    assert batch.scale is not None and batch.target is not None
    out = model(batch)
    assert out.log_volatility is not None
    range_loss(out.log_volatility, batch.scale, torch.randn_like(batch.target)).backward()
    grad = model.baseline.signal_weight.grad
    assert grad is None or not grad.any()
    assert model.output_head.weight.grad is not None and model.output_head.weight.grad.any()


def test_two_halves_summed_across_ranks_are_the_whole_batch() -> None:
    """Under DDP each rank holds half the batch; with the sums taken across the ranks, the
    mean of the ranks' losses (what DDP's averaged gradients follow) is the whole batch's."""
    torch.manual_seed(3)
    scale, ranges = torch.rand(8, 2) + 0.5, torch.randn(8, 2)
    ranges[1, 0] = float("nan")
    log_vol = torch.randn(8, 2, requires_grad=True)
    whole = range_loss(log_vol, scale, ranges)
    halves = [slice(0, 4), slice(4, 8)]
    parts = []
    for half in halves:  # each rank's own sums, as the all-reduce would add them up
        residual = ranges[half] - scale[half].log() - log_vol[half]
        valid = residual.isfinite()
        kept = torch.where(valid, residual, torch.zeros_like(residual))
        parts.append(torch.stack([kept.sum(0), valid.sum(0).float()]))
    total = parts[0] + parts[1]
    ranks = [
        range_loss(log_vol[h], scale[h], ranges[h], across=lambda _: total, shares=2)
        for h in halves
    ]
    torch.testing.assert_close((ranks[0] + ranks[1]) / 2, whole)
    alone = range_loss(log_vol[halves[0]], scale[halves[0]], ranges[halves[0]])
    assert not torch.isclose(alone, ranks[0])  # without the sums, a rank's own mean differs
