"""The startup report of checkpointing measures the first training forward, and runs none."""

from __future__ import annotations

from typing import Any

import torch

from foxhunt import TemporalFusionTransformer
from foxhunt.memory.saved import measure_saved
from foxhunt.memory.startup import watch_first_forward
from foxhunt.task import batch_loss
from helpers import make_batch, small_model


def test_the_first_training_forward_is_measured_once_and_no_forward_is_added() -> None:
    cfg = small_model(checkpointing=("past_vsn", "fusion_decoder"))
    torch.manual_seed(0)
    model = TemporalFusionTransformer(cfg)
    batch = make_batch(cfg, 6)
    calls: list[bool] = []
    model.register_forward_pre_hook(lambda m, args: calls.append(m.training))
    records: list[dict[str, Any]] = []
    watch_first_forward(model, records.append)
    with torch.no_grad():
        model.eval()(batch)  # an evaluation first: not the training forward
    model.train()
    torch.manual_seed(1)
    batch_loss(model, batch, cfg.quantiles).backward()
    batch_loss(model, batch, cfg.quantiles).backward()
    assert calls == [False, True, True]  # the watch ran nothing of its own
    (record,) = records
    assert record["segments"] == ["past_vsn", "fusion_decoder"] and record["batch_size"] == 6
    torch.manual_seed(1)
    forward_only = measure_saved(model, lambda: model(batch))  # type: ignore[arg-type,return-value]
    assert record["saved_bytes_checkpointed"] == forward_only.total
    assert record["saved_bytes_plain"] == forward_only.plain > forward_only.total
    assert 0 < record["kept_input_bytes"] < record["saved_bytes_checkpointed"]


def test_a_plain_model_is_not_reported() -> None:
    cfg = small_model()
    model = TemporalFusionTransformer(cfg).train()
    records: list[dict[str, Any]] = []
    remove = watch_first_forward(model, records.append)
    batch_loss(model, make_batch(cfg), cfg.quantiles).backward()
    assert records == []
    remove()
