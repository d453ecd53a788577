from __future__ import annotations

import pytest
import torch

from foxhunt import quantile_loss
from foxhunt.model.loss import quantile_loss_per_quantile


def test_quantile_loss_matches_hand_computed_value() -> None:
    pred = torch.tensor([[[0.0, 1.0], [2.0, 2.0]]])  # [B=1, H=2, Q=2]
    target = torch.tensor([[1.0, 0.0]])
    # q=0.2: e = 1 -> 0.2 ; e = -2 -> 0.8*2 = 1.6      mean 0.9
    # q=0.8: e = 0 -> 0   ; e = -2 -> 0.2*2 = 0.4      mean 0.2
    per_q = quantile_loss_per_quantile(pred, target, (0.2, 0.8))
    torch.testing.assert_close(per_q, torch.tensor([0.9, 0.2]))
    torch.testing.assert_close(quantile_loss(pred, target, (0.2, 0.8)), torch.tensor(0.55))


def test_median_loss_is_half_the_absolute_error() -> None:
    pred, target = torch.randn(4, 3, 1), torch.randn(4, 3)
    expected = 0.5 * (target - pred[..., 0]).abs().mean()
    torch.testing.assert_close(quantile_loss(pred, target, (0.5,)), expected)


@pytest.mark.parametrize(
    ("pred_shape", "target_shape", "name"),
    [((2, 3, 2), (2, 3), "pred"), ((2, 3, 3), (2, 4), "target"), ((2, 3), (2, 3), "pred")],
)
def test_quantile_loss_rejects_bad_shapes(pred_shape, target_shape, name) -> None:
    with pytest.raises(ValueError, match=rf"^{name}: expected shape"):
        quantile_loss(torch.zeros(pred_shape), torch.zeros(target_shape), (0.1, 0.5, 0.9))
