"""Checkpointed training must give exactly the gradients of plain training, dropout included."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import Tensor, nn
from torch.utils._pytree import tree_map_only
from verify import check_checkpointing

from foxhunt import TemporalFusionTransformer, TFTBatch, TFTConfig
from foxhunt.bench.memory import random_batch
from foxhunt.errors import ConfigError
from foxhunt.model.checkpointing import (
    CheckpointedForward,
    apply_checkpointing,
    checkpointed_segments,
    remove_checkpointing,
)
from foxhunt.model.config import SEGMENTS
from foxhunt.task import batch_loss
from helpers import small_model


def small_config(**overrides: Any) -> TFTConfig:
    """``helpers.small_model`` with two LSTM layers (so the LSTMs' own dropout runs) and
    dropout high enough that a wrong mask shows."""
    return small_model(**{"dropout": 0.3, "lstm_layers": 2, **overrides})


def setup(seed: int = 0) -> tuple[TemporalFusionTransformer, TFTBatch, Callable[[], Tensor]]:
    cfg = small_config()
    torch.manual_seed(seed)
    model = TemporalFusionTransformer(cfg).train()
    batch = random_batch(cfg, 5, seed=seed)
    return model, batch, lambda: batch_loss(model, batch, cfg.quantiles)


@pytest.mark.parametrize("policy", ["full", *SEGMENTS])
def test_gradients_equal_plain_training(policy: str) -> None:
    model, _, loss_fn = setup()
    assert check_checkpointing(model, loss_fn, policy if policy == "full" else (policy,)) == []


@pytest.mark.parametrize(
    ("segment", "cut", "changed"),
    [
        ("lstm_encoder", "static_encoders.state_h.", "past_vsn."),
        ("fusion_decoder", "lstm_encoder.", None),  # everything upstream is cut
    ],
)
def test_the_check_catches_a_detaching_fake_checkpoint(
    segment: str, cut: str, changed: str | None
) -> None:
    """``.detach()`` on a segment's inputs is not checkpointing: parameters upstream lose
    their gradient or get a wrong one. The check that passes real checkpointing fails it."""
    model, _, loss_fn = setup()
    module = getattr(model, segment)

    def fake_checkpoint(m: nn.Module) -> None:
        plain = module.forward

        def detached(*args: Any) -> Any:
            return plain(*tree_map_only(Tensor, Tensor.detach, args))

        module.forward = detached

    problems = check_checkpointing(model, loss_fn, fake_checkpoint)
    del module.forward
    assert any(p.startswith(cut) and "no gradient" in p for p in problems), problems
    if changed is not None:  # reached by another path too: a wrong gradient, not a missing one
        assert any(p.startswith(changed) and "differs" in p for p in problems), problems


def test_not_preserving_the_rng_state_diverges() -> None:
    """Control: recomputing with fresh dropout masks gives wrong gradients, and the check
    sees it (so the equality above is not vacuous)."""
    model, _, loss_fn = setup()
    problems = check_checkpointing(
        model, loss_fn, lambda m: apply_checkpointing(m, "full", preserve_rng_state=False)
    )
    assert any("gradient differs" in p for p in problems)


def count_forward_calls(model: nn.Module) -> dict[str, int]:
    """Counts every run of each segment's own forward, recomputation included."""
    calls = dict.fromkeys(SEGMENTS, 0)
    for name in SEGMENTS:
        module = getattr(model, name)
        plain = module.forward

        def counted(*args: Any, _name: str = name, _plain: Any = plain, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _plain(*args, **kwargs)

        module.forward = counted
    return calls


@pytest.mark.parametrize("policy", ["none", "full"])
def test_checkpointed_segments_run_twice_per_step_once_without_grad(policy: str) -> None:
    model, _, loss_fn = setup()
    calls = count_forward_calls(model)  # an instance-level forward: kept under the wrapper
    apply_checkpointing(model, policy)
    runs = 1 if policy == "none" else 2
    loss_fn().backward()
    assert calls == dict.fromkeys(SEGMENTS, runs), "forward, then recompute in backward"
    for mode in ("no_grad", "eval"):
        calls.update(dict.fromkeys(SEGMENTS, 0))
        model.train(mode != "eval")
        with torch.set_grad_enabled(mode != "no_grad"):
            loss_fn()
        assert calls == dict.fromkeys(SEGMENTS, 1), mode
    remove_checkpointing(model)
    assert all(not isinstance(getattr(model, s).forward, CheckpointedForward) for s in SEGMENTS)


def test_fifty_adamw_steps_give_the_same_loss_curve() -> None:
    def curve(policy: str) -> list[float]:
        cfg = small_config()
        torch.manual_seed(0)
        model = TemporalFusionTransformer(cfg).train()
        apply_checkpointing(model, policy)
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
        losses = []
        for step in range(50):
            batch = random_batch(cfg, 8, seed=step % 5)
            optimizer.zero_grad(set_to_none=True)
            loss = batch_loss(model, batch, cfg.quantiles)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    plain, checkpointed = curve("none"), curve("full")
    # steps 0 and 45 see the same batch (seed 0): the model learns, so this compares no constants
    assert plain[45] < plain[0], "the model learns: the comparison is not of constants"
    torch.testing.assert_close(checkpointed, plain, rtol=1e-6, atol=0.0)


def test_state_dict_unchanged_and_interchangeable() -> None:
    model, batch, _ = setup()
    before = model.state_dict()
    assert apply_checkpointing(model, "full") == list(SEGMENTS)
    after = model.state_dict()
    assert list(after) == list(before)
    assert all(after[k] is before[k] or torch.equal(after[k], before[k]) for k in before)
    torch.manual_seed(1)
    plain = TemporalFusionTransformer(model.config)
    plain.load_state_dict(after, strict=True)  # checkpointed weights load into a plain model
    model.load_state_dict(plain.state_dict(), strict=True)  # and back
    model.eval(), plain.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(batch).quantiles, plain(batch).quantiles, rtol=0, atol=0)


def test_apply_is_idempotent_and_reversible() -> None:
    model, _, _ = setup()
    apply_checkpointing(model, "full")
    apply_checkpointing(model, "full")
    wrappers = [getattr(model, s).__dict__["forward"] for s in SEGMENTS]
    assert all(isinstance(w, CheckpointedForward) and w.original is None for w in wrappers)
    clone = copy.deepcopy(model)  # a copy's wrappers run the copy's segments
    assert clone.past_vsn.__dict__["forward"].module is clone.past_vsn
    assert apply_checkpointing(model, ("lstm_encoder", "past_vsn")) == ["past_vsn", "lstm_encoder"]
    assert checkpointed_segments(model) == ["past_vsn", "lstm_encoder"]
    assert remove_checkpointing(model) == ["past_vsn", "lstm_encoder"]
    assert all("forward" not in getattr(model, s).__dict__ for s in SEGMENTS)
    assert apply_checkpointing(model, "none") == [] and checkpointed_segments(model) == []


def test_policy_comes_from_the_config_and_bad_names_fail_before_any_change() -> None:
    model, _, _ = setup()
    cfg = small_config(checkpointing=("fusion_decoder", "static_vsn"))
    assert apply_checkpointing(model, cfg.checkpointing) == ["static_vsn", "fusion_decoder"]
    with pytest.raises(ConfigError, match="unknown segments"):
        apply_checkpointing(model, ("past_vsn", "post_lstm_gate"))
    with pytest.raises(ConfigError, match="none"):
        apply_checkpointing(model, "everything")
    assert checkpointed_segments(model) == ["static_vsn", "fusion_decoder"]
    with pytest.raises(ConfigError, match="no child module"):
        apply_checkpointing(nn.Linear(2, 2), "full")


def test_outputs_equal_in_train_and_eval() -> None:
    model, batch, _ = setup()
    outputs = {}
    for policy in ("none", "full"):
        apply_checkpointing(model, policy)
        torch.manual_seed(3)
        model.train()
        train_out = model(batch).quantiles
        model.eval()
        with torch.no_grad():
            outputs[policy] = (train_out.detach(), model(batch).quantiles)
    for plain, checkpointed in zip(outputs["none"], outputs["full"], strict=True):
        torch.testing.assert_close(checkpointed, plain, rtol=0, atol=0)
