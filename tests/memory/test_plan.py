"""The probe: a cost table measured from the model, a plan applied, its peak checked."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from foxhunt.data import DataConfig, prepare_data
from foxhunt.errors import ConfigError
from foxhunt.memory.bench import PRESETS, random_batch
from foxhunt.memory.budget import MB, CostTable, predict_peak
from foxhunt.memory.checkpointing import apply_checkpointing, checkpointed_segments
from foxhunt.memory.oom import parse_budget
from foxhunt.memory.plan import measure_costs, measure_step_peak, plan_trainer
from foxhunt.memory.startup import first_training_batch
from foxhunt.model.config import SEGMENTS, TFTConfig
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.run import HISTORY_FILE, RunConfig
from foxhunt.training.config import TrainingConfig
from foxhunt.training.job import JobOptions, fit_model_config, train
from foxhunt.training.trainer import Trainer

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
    table = measure_costs(model, random_batch(TINY, 8), TINY.quantiles, repeats=1)
    torch.testing.assert_close(torch.rand(3), expected_next)  # the RNG is left as it was
    assert checkpointed_segments(model) == ["lstm_encoder"] and not model.training
    assert [s.name for s in table.segments] == list(SEGMENTS)
    past = table.segment("past_vsn")
    assert past.saved_bytes > past.kept_bytes > 0 and past.forward_seconds > 0
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    assert table.fixed_bytes >= 4 * params  # weights, gradients, two AdamW moments
    assert table.other_saved_bytes >= 0 and table.transient_bytes >= 0


def test_plan_trainer_applies_checkpointing_and_micro_batches() -> None:
    data = prepare_data(DataConfig(synthetic_days=8, lookback=16, horizon=4))
    cfg = fit_model_config(replace(TINY, num_static=0, num_past=1, num_future=0), data)
    model = TemporalFusionTransformer(cfg)
    training = TrainingConfig(batch_size=16, device="cpu", max_steps_per_epoch=1, epochs=1)
    trainer = Trainer(
        model, training, train_set=data.train, val_set=data.validation, quantiles=cfg.quantiles
    )
    big = plan_trainer(trainer, 1e12)
    assert big.checkpointing == () and trainer.micro_batch_size is None
    one_sample = predict_peak(_table(trainer), SEGMENTS, 1)
    small = plan_trainer(trainer, one_sample * 1.02)
    assert small.accumulation_steps > 1 and trainer.micro_batch_size == small.micro_batch_size
    assert checkpointed_segments(model) == list(small.checkpointing)
    trainer.fit()  # trains micro-batched and checkpointed
    assert trainer.state.global_step == 1


def _table(trainer: Trainer) -> CostTable:
    batch = first_training_batch(trainer)
    return measure_costs(trainer.model, batch, trainer.quantiles, repeats=1)


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
    """Probe on one batch, measure a real training step (AdamW included) on another."""
    preset = PRESETS["cpu-reference"]
    cfg, n = preset.config, preset.batch_size
    torch.manual_seed(0)
    model = TemporalFusionTransformer(cfg)
    table = measure_costs(model, random_batch(cfg, n, seed=2), cfg.quantiles, repeats=1)
    training = TrainingConfig(batch_size=n, device="cpu")
    trainer = Trainer(model, training, train_set=[0] * n, val_set=[], quantiles=cfg.quantiles)  # type: ignore[arg-type]
    batch = random_batch(cfg, n, seed=1)
    errors = {}
    for plan in ((), ("past_vsn",)):
        apply_checkpointing(model, plan)
        predicted = predict_peak(table, plan, n)
        measured = measure_step_peak(trainer, batch)
        errors[plan] = (predicted - measured) / measured
        print(f"{plan or 'plain'}: predicted {predicted / MB:.1f} MB, measured {measured / MB:.1f} MB, "
              f"error {errors[plan]:+.1%}")  # fmt: skip
    assert all(abs(e) <= 0.15 for e in errors.values()), errors


def job_config() -> RunConfig:
    model = replace(TINY, num_static=0, num_past=1, num_future=0, dropout=0.2)
    training = TrainingConfig(
        epochs=1, batch_size=16, max_steps_per_epoch=3, patience=0, device="cpu", seed=3
    )
    return RunConfig(data=DataConfig(synthetic_days=8, lookback=16, horizon=4), model=model,
                     training=training)  # fmt: skip


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
