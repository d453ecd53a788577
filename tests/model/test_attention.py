from __future__ import annotations

import pytest
import torch

from foxhunt.model.attention import InterpretableMultiHeadAttention, decoder_causal_mask

L, H, D, HEADS = 6, 3, 16, 4


@pytest.fixture
def attention() -> InterpretableMultiHeadAttention:
    torch.manual_seed(0)
    return InterpretableMultiHeadAttention(D, HEADS)


def inputs(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(2, L + H, D, generator=torch.Generator().manual_seed(1), dtype=dtype)
    return x[:, L:], x


def test_mask_lets_decoder_step_i_see_positions_up_to_lookback_plus_i() -> None:
    mask = decoder_causal_mask(L, H)
    assert mask.shape == (H, L + H) and mask.dtype == torch.bool
    for i in range(H):
        assert mask[i, : L + i + 1].all() and not mask[i, L + i + 1 :].any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sdpa_path_equals_explicit_path(attention, dtype: torch.dtype) -> None:
    attention = attention.to(dtype)
    query, x = inputs(dtype)
    mask = decoder_causal_mask(L, H)
    fast, none = attention(query, x, x, mask, need_weights=False)
    explicit, weights = attention(query, x, x, mask, need_weights=True)
    assert none is None and weights is not None
    torch.testing.assert_close(fast, explicit, atol=1e-6, rtol=1e-5)


def test_weights_are_causal_rows_of_a_distribution(attention) -> None:
    query, x = inputs()
    mask = decoder_causal_mask(L, H)
    _, weights = attention(query, x, x, mask, need_weights=True)
    assert weights is not None and weights.shape == (2, H, L + H)
    assert (weights[:, ~mask] == 0).all()  # exactly zero, not just small
    assert (weights[:, mask] > 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, H))


def test_weights_are_the_mean_of_per_head_attention(attention) -> None:
    query, x = inputs()
    mask = decoder_causal_mask(L, H)
    _, weights = attention(query, x, x, mask, need_weights=True)
    dh = D // HEADS
    q = attention.query(query).view(2, H, HEADS, dh).transpose(1, 2)
    k = attention.key(x).view(2, L + H, HEADS, dh).transpose(1, 2)
    scores = (q @ k.transpose(-1, -2)) / dh**0.5
    per_head = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    torch.testing.assert_close(weights, per_head.mean(1))


@pytest.mark.parametrize("need_weights", [True, False])
def test_bf16_autocast_has_no_nan_and_exact_zero_masking(attention, need_weights: bool) -> None:
    query, x = inputs()
    query, x = 50 * query, 50 * x  # large scores: an additive -1e9 style mask would overflow
    mask = decoder_causal_mask(L, H)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, weights = attention(query, x, x, mask, need_weights=need_weights)
    assert not torch.isnan(out).any()
    if need_weights:
        assert weights is not None and not torch.isnan(weights).any()
        assert (weights[:, ~mask] == 0).all()
        torch.testing.assert_close(weights.float().sum(-1), torch.ones(2, H), atol=2e-2, rtol=0)


def test_rejects_heads_that_do_not_divide_hidden() -> None:
    with pytest.raises(ValueError, match="divisible"):
        InterpretableMultiHeadAttention(10, 4)
