from __future__ import annotations

import pytest
import torch

from foxhunt.model.dropout import FastDropout, HashedMask


@pytest.mark.parametrize("p", [0.1, 0.25, 0.5])
def test_keep_rate_and_mean_match_nn_dropout(p: float) -> None:
    torch.manual_seed(0)
    drop = FastDropout(p).train()
    out = drop(torch.ones(200_000))
    kept = (out != 0).float().mean().item()
    assert abs(kept - (1 - p)) < 5e-3
    assert abs(out.mean().item() - 1.0) < 1e-2
    assert torch.allclose(out[out != 0], torch.tensor(1 / drop.keep_probability))


def test_keep_mask_is_bool_and_uses_the_global_rng() -> None:
    drop = FastDropout(0.3)
    torch.manual_seed(1)
    first = drop.keep_mask((7, 5, 3), torch.device("cpu"))
    torch.manual_seed(1)
    again = drop.keep_mask((7, 5, 3), torch.device("cpu"))
    assert first.dtype == torch.bool and first.shape == (7, 5, 3)
    assert torch.equal(first, again)


def test_eval_and_zero_p_are_identity() -> None:
    x = torch.randn(4, 5)
    assert torch.equal(FastDropout(0.5).eval()(x), x)
    assert torch.equal(FastDropout(0.0).train()(x), x)


def test_is_an_nn_dropout() -> None:
    """It stands in for an nn.Dropout: found as one, ``p`` checked and kept as nn.Dropout's,
    no state in checkpoints, train/eval from its parent, and its mask from the global RNG,
    so that activation checkpointing's RNG replay recomputes the same mask in backward."""
    drop = FastDropout(0.25)
    assert isinstance(drop, torch.nn.Dropout) and drop.p == 0.25 and not drop.inplace
    with pytest.raises(ValueError, match="probability"):
        FastDropout(1.5)
    assert drop.state_dict() == {}
    parent = torch.nn.Sequential(drop).eval()
    x = torch.randn(64, 32, requires_grad=True)
    assert torch.equal(parent(x), x)
    parent.train()
    torch.manual_seed(0)
    state = torch.get_rng_state()
    first = drop(x)
    assert not torch.equal(torch.get_rng_state(), state)  # drawn from the global RNG ...
    torch.manual_seed(1)
    assert not torch.equal(drop(x), first)  # ... which seeding steers
    y = torch.utils.checkpoint.checkpoint(drop, x, use_reentrant=False)
    y.backward(torch.ones_like(y))
    assert 0 < int((y == 0).sum()) < y.numel()
    # the recomputed mask is the forward's: gradient 1/keep exactly where y kept x
    assert x.grad is not None
    torch.testing.assert_close(x.grad, (y != 0).float() / drop.keep_probability)


def test_hashed_mask_keeps_the_right_share_independently_of_the_seed() -> None:
    torch.manual_seed(0)
    drop = FastDropout(0.3)
    index = torch.arange(1 << 20)
    first, second = drop.hashed_mask(torch.device("cpu")), drop.hashed_mask(torch.device("cpu"))
    assert first.seed != second.seed  # a new seed each call, from the global RNG
    a, b = first.keep(index), second.keep(index)
    for kept in (a, b):
        assert abs(kept.float().mean().item() - drop.keep_probability) < 0.002
    # two seeds' bits agree as often as independent draws would (0.7^2 + 0.3^2)
    assert abs((a == b).float().mean().item() - 0.58) < 0.003
    # neighbours are independent too: no stripes along the index
    assert abs((a[1:] == a[:-1]).float().mean().item() - 0.58) < 0.003


def test_hashed_mask_is_a_function_of_seed_and_index() -> None:
    mask = HashedMask(seed=-123456789012345, threshold=1 << 15)
    index = torch.arange(1000)
    assert torch.equal(mask.keep(index), mask.keep(index))
    assert torch.equal(mask.keep(index[500:]), mask.keep(index)[500:])
    assert HashedMask(seed=7, threshold=0).keep(index).sum() == 0
    assert HashedMask(seed=7, threshold=1 << 16).keep(index).all()
