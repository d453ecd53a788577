"""The task module: one pinball formula, the loss of a batch, the units."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from foxhunt import TemporalFusionTransformer, TFTConfig, quantile_loss
from foxhunt.bench.memory import random_batch
from foxhunt.errors import FoxhuntError
from foxhunt.task import BASIS_POINTS, batch_loss, bp_per_unit, loss_of, pinball, pinball_total

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "foxhunt"
TINY = TFTConfig(
    num_static=2, num_past=3, num_future=1, lookback=6, horizon=3, hidden_size=8,
    variable_hidden_size=4, attention_heads=2, output="baseline",
)  # fmt: skip


def test_numpy_pinball_equals_the_direct_formula_on_random_data() -> None:
    rng = np.random.default_rng(0)
    pred, target = rng.normal(size=(50, 4, 3)) * 30, rng.normal(size=(50, 4)) * 30
    quantiles = (0.05, 0.5, 0.95)
    for i, q in enumerate(quantiles):
        error = target - pred[..., i]
        direct = np.maximum(q * error, (q - 1.0) * error)
        np.testing.assert_allclose(pinball(pred[..., i], target, q), direct, rtol=1e-12, atol=0)
    error = target[..., None] - pred
    q = np.asarray(quantiles)
    direct = np.maximum(q * error, (q - 1) * error)
    total, count = pinball_total(pred, target, quantiles)
    assert count == direct.size
    assert total == pytest.approx(float(direct.sum()), rel=1e-12)


def test_one_pinball_formula_in_the_package() -> None:
    """max(q * e, (q - 1) * e) is written once, in model/loss.py; everything else calls it."""
    formula = re.compile(r"maximum\(.*\(\s*q\s*-\s*1")  # np.maximum, torch.maximum, ...
    found = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for line in path.read_text().splitlines()
        if formula.search(line)
    ]
    assert found == ["model/loss.py"], found


def test_batch_loss_is_the_quantile_loss_of_the_forward() -> None:
    torch.manual_seed(0)
    model = TemporalFusionTransformer(TINY).eval()
    batch = random_batch(TINY, 5)
    assert batch.target is not None and batch.scale is not None
    out = model(batch).quantiles
    torch.testing.assert_close(
        batch_loss(model, batch, TINY.quantiles),
        quantile_loss(out, batch.target, TINY.quantiles),
        rtol=0,
        atol=0,
    )
    weighted = loss_of(model, TINY.quantiles, weighting="inverse_scale")(batch)
    expected = quantile_loss(out, batch.target, TINY.quantiles, batch.scale)
    torch.testing.assert_close(weighted, expected, rtol=0, atol=0)
    with pytest.raises(FoxhuntError, match="inverse_scale"):
        batch_loss(model, replace(batch, scale=None), TINY.quantiles, weighting="inverse_scale")


def test_basis_points_of_the_scaled_target() -> None:
    class Scaled:
        target_scale = 0.002

    assert bp_per_unit(Scaled()) == 0.002 * BASIS_POINTS == 20.0  # type: ignore[arg-type]
