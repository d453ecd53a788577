"""The probe: a cost table measured from the model, a plan applied, its peak checked."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from foxhunt.bench.accuracy import REFERENCE_CASES, check_predictions, format_checks
from foxhunt.bench.memory import PRESETS, random_batch
from foxhunt.errors import ConfigError
from foxhunt.jobs.train import JobOptions, train
from foxhunt.memory.budget import CostTable, predict_peak
from foxhunt.memory.moments import batch_tensors
from foxhunt.memory.oom import parse_budget
from foxhunt.memory.plan import measure_costs
from foxhunt.model.checkpointing import apply_checkpointing, checkpointed_segments
from foxhunt.model.config import SEGMENTS, TFTConfig
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.runs import HISTORY_FILE, RunConfig
from foxhunt.task import loss_of
from foxhunt.training.config import TrainingConfig
from foxhunt.training.memory import first_training_batch, plan_trainer
from foxhunt.training.trainer import Trainer
from helpers import fitted, tiny_data, tiny_model, tiny_run, tiny_training

TINY = TFTConfig(
    num_static=2,
    num_past=12,
    num_future=3,
    lookback=16,
    horizon=4,
    hidden_size=16,
    variable_hidden_size=4,
    attention_heads=2,
)


def test_cost_table_from_the_probe() -> None:
    model = TemporalFusionTransformer(TINY)
    apply_checkpointing(model, ("lstm_encoder",))
    model.eval()
    torch.manual_seed(5)
    expected_next = torch.rand(3)
    torch.manual_seed(5)
    table = measure_costs(model, random_batch(TINY, 8), loss_of(model, TINY.quantiles), repeats=1)
    torch.testing.assert_close(torch.rand(3), expected_next)  # the RNG is left as it was
    assert checkpointed_segments(model) == ["lstm_encoder"] and not model.training
    names = [s.name for s in table.segments]
    assert sorted(names) == sorted(SEGMENTS)
    assert names.index("static_encoders") < names.index("past_vsn")  # measured forward order
    past = table.segment("past_vsn")
    assert past.saved_bytes > past.kept_bytes > 0 and past.forward_seconds > 0
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    assert table.fixed_bytes >= 3 * params  # weights, two AdamW moments
    assert table.other_saved_bytes >= 0
    batch = sum(t.nbytes for t in batch_tensors(random_batch(TINY, 8)))
    assert table.batch_bytes == pytest.approx(batch / 8)
    # accumulating, the forward moment holds the earlier micro-batches' gradients: all of them
    assert table.forward.accumulating == pytest.approx(params, rel=0.1)
    assert 0 < past.backward.accumulating <= table.forward.accumulating


def test_plan_trainer_applies_checkpointing_and_micro_batches() -> None:
    data = tiny_data()
    cfg = fitted(tiny_model(), data)  # TINY with the bars' inputs
    model = TemporalFusionTransformer(cfg)
    training = TrainingConfig(batch_size=16, device="cpu", max_steps_per_epoch=1, epochs=1)
    trainer = Trainer(
        model, training, train_set=data.train, val_set=data.validation, quantiles=cfg.quantiles
    )
    big = plan_trainer(trainer, 1e12)
    assert big.checkpointing == () and trainer.micro_batch_size is None
    one_sample = predict_peak(_table(trainer), SEGMENTS, 1, batch_size=16)
    small = plan_trainer(trainer, one_sample * 1.02)
    assert small.accumulation_steps > 1 and trainer.micro_batch_size == small.micro_batch_size
    assert checkpointed_segments(model) == list(small.checkpointing)
    trainer.fit()  # trains micro-batched and checkpointed
    assert trainer.state.global_step == 1


def _table(trainer: Trainer) -> CostTable:
    batch = first_training_batch(trainer)
    return measure_costs(trainer.model, batch, loss_of(trainer.model, trainer.quantiles), repeats=1)


@pytest.fixture
def release_heap() -> Iterator[None]:
    """Give the ~100 MB this test frees back to the OS: RSS-based tests that run later
    (the leak warning in test_profiler.py) would otherwise grow into the freed heap."""
    yield
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@pytest.mark.slow
@pytest.mark.usefixtures("release_heap")
def test_predicted_peak_within_15_percent_on_the_cpu_reference() -> None:
    """Probe on one batch, measure a real training step (AdamW included) on another, for
    plain, checkpointed and micro-batch plans."""
    preset = PRESETS["cpu-reference"]
    checks = check_predictions(preset.config, preset.batch_size)
    print(format_checks(checks, preset.batch_size))
    assert [c.case for c in checks] == list(REFERENCE_CASES)
    assert any(c.case.micro_batch for c in checks) and any(c.case.checkpointing for c in checks)
    assert all(abs(c.error) <= 0.15 for c in checks), [(c.case, c.error) for c in checks]


def job_config() -> RunConfig:
    return tiny_run(model=tiny_model(dropout=0.2), training=tiny_training(batch_size=16))


def test_job_plans_logs_and_trains_as_without_a_budget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="foxhunt"):
        planned = train(
            job_config(), tmp_path / "a", options=JobOptions(memory_budget=parse_budget("4GB"))
        )
    plain = train(job_config(), tmp_path / "b")  # fmt: skip
    lines = (tmp_path / "a" / HISTORY_FILE).read_text().splitlines()
    (record,) = [r for r in map(json.loads, lines) if r["event"] == "memory_plan"]
    assert record["checkpointing"] == [] and record["budget_bytes"] == 4 << 30
    assert "memory plan: no checkpointing; batch 16 at once" in caplog.text
    assert planned.metrics["test"] == plain.metrics["test"]  # the probe disturbs nothing


def test_job_refuses_a_budget_nothing_fits(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no plan fits"):
        train(job_config(), tmp_path / "a", options=JobOptions(memory_budget=1024.0))
