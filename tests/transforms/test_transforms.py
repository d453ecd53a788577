"""The model's transforms, applied from outside through one function, in one order."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys

import pytest
import torch

from foxhunt import TemporalFusionTransformer, TFTConfig, quantile_loss
from foxhunt.bench.memory import PRESETS, random_batch
from foxhunt.memory.saved import measure_saved
from foxhunt.model import SEGMENTS
from foxhunt.quant import QATConfig, schedule_of
from foxhunt.task import batch_loss
from foxhunt.transforms import (
    apply_checkpointing,
    apply_model_transforms,
    checkpointed_segments,
    prepare_qat,
)
from helpers import make_batch, small_model


def built(cfg: TFTConfig, qat: QATConfig | None = None) -> TemporalFusionTransformer:
    """A model as the job, ``load_run`` and the export loader build it."""
    return apply_model_transforms(TemporalFusionTransformer(cfg), cfg, qat=qat)


@pytest.fixture
def cfg() -> TFTConfig:
    return small_model(quantiles=(0.1, 0.5, 0.9), dropout=0.1)


def test_a_full_policy_built_through_the_one_function_is_checkpointed(cfg: TFTConfig) -> None:
    full = dataclasses.replace(cfg, checkpointing="full")
    assert checkpointed_segments(built(full)) == list(SEGMENTS)
    chosen = dataclasses.replace(cfg, checkpointing=("fusion_decoder", "past_vsn"))
    assert checkpointed_segments(built(chosen)) == ["past_vsn", "fusion_decoder"]
    assert checkpointed_segments(built(cfg)) == []
    # the switch holds through the bare constructor too (tests/transforms/test_doors.py)
    assert checkpointed_segments(TemporalFusionTransformer(full)) == list(SEGMENTS)


def test_config_checkpointing_wraps_every_segment_and_keeps_gradients(cfg: TFTConfig) -> None:
    """The config's policy takes effect when the model is built: every segment runs under
    foxhunt's transform, and the gradients (dropout included) are those of the plain model."""
    grads = []
    for policy in ("none", "full"):
        torch.manual_seed(0)
        model = built(dataclasses.replace(cfg, checkpointing=policy)).train()
        assert checkpointed_segments(model) == ([] if policy == "none" else list(SEGMENTS))
        batch = make_batch(cfg)
        assert batch.target is not None
        torch.manual_seed(1)
        quantile_loss(model(batch).quantiles, batch.target, cfg.quantiles).backward()
        grads.append([p.grad for p in model.parameters()])
    for plain, checkpointed in zip(*grads, strict=True):
        torch.testing.assert_close(checkpointed, plain)


def test_config_checkpointing_saves_memory_at_the_reference_config() -> None:
    """``TFTConfig(checkpointing="full")`` at the CPU reference config keeps at most 20% of the
    bytes the plain model saves for backward (measured, net of the inputs checkpointing keeps)."""
    preset = PRESETS["cpu-reference"]
    batch = random_batch(preset.config, preset.batch_size, seed=0)
    saved = {}
    for policy in ("none", "full"):
        torch.manual_seed(0)
        model = built(dataclasses.replace(preset.config, checkpointing=policy)).train()
        saved[policy] = measure_saved(
            model, lambda m=model: batch_loss(m, batch, preset.config.quantiles)
        )
    assert saved["full"].checkpoint_inputs > 0  # the meter saw what checkpointing keeps
    assert saved["full"].total <= 0.2 * saved["none"].total, (saved["full"], saved["none"])


def test_qat_is_prepared_after_checkpointing_as_by_hand(cfg: TFTConfig) -> None:
    """Checkpointing, then QAT prepare: the same model, state and forward as by hand."""
    full = dataclasses.replace(cfg, checkpointing="full")
    torch.manual_seed(0)
    model = built(full, qat=QATConfig())
    torch.manual_seed(0)
    by_hand = TemporalFusionTransformer(full)
    apply_checkpointing(by_hand, "full")
    prepare_qat(by_hand, QATConfig())
    assert checkpointed_segments(model) == list(SEGMENTS) and schedule_of(model) is not None
    state, expected = model.state_dict(), by_hand.state_dict()
    assert list(state) == list(expected)
    assert all(torch.equal(state[k], expected[k]) for k in expected)
    batch = make_batch(cfg)
    outputs = []
    for m in (model.train(), by_hand.train()):
        torch.manual_seed(1)
        outputs.append(m(batch).quantiles)
    torch.testing.assert_close(outputs[0], outputs[1], rtol=0, atol=0)


#: the public names each module promises (README, docs/architecture.md): a removal fails
PUBLIC = {
    "foxhunt": [
        "TFTBatch", "TFTConfig", "TFTOutput", "TemporalFusionTransformer", "apply_checkpointing",
        "apply_model_transforms", "checkpointed_segments", "quantile_loss", "remove_checkpointing",
    ],
    "foxhunt.transforms": [
        "Policy", "apply_checkpointing", "apply_model_transforms", "checkpointed_segments",
        "convert", "prepare_qat", "remove_checkpointing", "resolve_policy",
    ],
}  # fmt: skip


def test_the_public_names_stay_importable() -> None:
    """Each promised name imports from a fresh interpreter (as a user's script starts, before
    anything imported the lazy ones' modules), is in ``__all__``, and a re-export is the
    same object as its source."""
    lines = [f"from {module} import {', '.join(names)}" for module, names in PUBLIC.items()]
    lines += [f"import {module}; print(sorted({module}.__all__))" for module in PUBLIC]
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    for (module, names), listed in zip(PUBLIC.items(), done.stdout.splitlines(), strict=True):
        assert set(names) <= set(ast.literal_eval(listed)), module
    import foxhunt.quant
    import foxhunt.transforms

    assert foxhunt.apply_checkpointing is foxhunt.transforms.apply_checkpointing
    assert foxhunt.transforms.prepare_qat is foxhunt.quant.prepare_qat
    assert foxhunt.transforms.convert is foxhunt.quant.convert
