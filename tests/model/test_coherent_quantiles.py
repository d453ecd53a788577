"""Coherent quantiles (`TFTConfig.sort_quantiles`): sorted in training and prediction alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from foxhunt.migrations import sections_of
from foxhunt.model import TemporalFusionTransformer, TFTConfig
from foxhunt.task import CrossingQuantilesWarning, batch_loss, check_coherent, crossed_forecasts
from foxhunt.task.metrics import pinball
from helpers import make_batch, small_model

LEVELS = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)


def outputs(sort: bool) -> torch.Tensor:
    """A direct-output model at its random initialization: the head's quantiles cross."""
    cfg = small_model(quantiles=LEVELS, sort_quantiles=sort)
    torch.manual_seed(0)
    model = TemporalFusionTransformer(cfg).eval()
    with torch.no_grad():
        return model(make_batch(cfg, 64)).quantiles


def test_an_untrained_direct_head_crosses_unless_sorted() -> None:
    raw, ordered = outputs(sort=False), outputs(sort=True)
    assert crossed_forecasts(raw.numpy()) > 0  # so the sorted case below is not vacuous
    assert crossed_forecasts(ordered.numpy()) == 0
    torch.testing.assert_close(ordered, raw.sort(dim=-1).values, rtol=0, atol=0)


def test_training_steps_keep_quantiles_sorted_and_gradients_flow() -> None:
    cfg = small_model(quantiles=LEVELS)
    torch.manual_seed(1)
    model = TemporalFusionTransformer(cfg).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(5):
        batch = make_batch(cfg, 16, seed=step)
        optimizer.zero_grad()
        loss = batch_loss(model, batch, cfg.quantiles)
        loss.backward()
        grads = [p.grad for p in model.output_head.parameters()]
        assert all(g is not None and g.abs().sum() > 0 for g in grads)
        optimizer.step()
        with torch.no_grad():
            assert crossed_forecasts(model(batch).quantiles.numpy()) == 0


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, (3, 2, len(LEVELS)), elements=st.floats(-5, 5)),
    arrays(np.float64, (3, 2), elements=st.floats(-5, 5)),
)
def test_sorting_never_raises_the_pinball_loss(pred: np.ndarray, target: np.ndarray) -> None:
    """sum_k rho_tk(y - x_k) = sum_k tk (y - x_k) + sum_k max(x_k - y, 0): the second sum
    ignores the order, the first is least with the largest x on the largest level
    (the rearrangement inequality)."""
    levels = np.asarray(LEVELS)
    raw = pinball(pred, target[..., None], levels).sum(axis=-1)
    ordered = pinball(np.sort(pred, axis=-1), target[..., None], levels).sum(axis=-1)
    assert (ordered <= raw + 1e-12).all()


def test_crossing_forecasts_warn_naming_the_count() -> None:
    crossed = np.array([[[0.1, 0.0, 0.3]], [[0.0, 0.1, 0.2]]])
    with pytest.warns(CrossingQuantilesWarning, match="1 of 2 forecasts"):
        check_coherent(crossed, "predict")
    check_coherent(np.sort(crossed, axis=-1), "predict")  # the suite errors on a warning


def test_runs_saved_before_the_field_load_unsorted() -> None:
    saved = small_model().to_dict()
    del saved["sort_quantiles"]
    assert TFTConfig.from_dict(sections_of({"model": saved})["model"]).sort_quantiles is False
    with pytest.raises(Exception, match="sort_quantiles"):
        small_model(sort_quantiles="yes")
