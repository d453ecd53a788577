"""`foxhunt train` with checkpointing: applied, measured at startup, and training unchanged."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from foxhunt.jobs.train import train
from foxhunt.model.checkpointing import checkpointed_segments
from foxhunt.model.config import SEGMENTS
from foxhunt.runs import HISTORY_FILE, RunConfig
from foxhunt.serving import load_run
from helpers import tiny_model, tiny_run, tiny_training


def run_config(checkpointing: str | tuple[str, ...]) -> RunConfig:
    return tiny_run(
        model=tiny_model(dropout=0.2, checkpointing=checkpointing),
        training=tiny_training(max_steps_per_epoch=4),
    )


def history(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / HISTORY_FILE).read_text().splitlines()]


def test_checkpointed_job_logs_measured_savings_and_trains_identically(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="foxhunt"):
        checkpointed = train(run_config(("past_vsn", "fusion_decoder")), tmp_path / "ckpt")
    plain = train(run_config("none"), tmp_path / "plain")
    events = history(tmp_path / "ckpt")
    (record,) = [e for e in events if e["event"] == "checkpointing"]
    assert record["segments"] == ["past_vsn", "fusion_decoder"]
    assert 0 < record["kept_input_bytes"] < record["saved_bytes_checkpointed"]
    assert record["saved_bytes_checkpointed"] < record["saved_bytes_plain"]
    assert "activation checkpointing of past_vsn, fusion_decoder" in caplog.text
    assert not [e for e in history(tmp_path / "plain") if e["event"] == "checkpointing"]
    # measuring the first forward draws no random numbers training would have drawn
    assert checkpointed.metrics["test"] == plain.metrics["test"]
    assert losses(events) == losses(history(tmp_path / "plain"))


def losses(events: list[dict[str, Any]]) -> list[tuple[float, float]]:
    return [(e["train_loss"], e["val_loss"]) for e in events if e["event"] == "epoch"]


def test_saved_run_config_keeps_the_policy(tmp_path: Path) -> None:
    cfg = run_config("full")
    cfg = replace(cfg, training=replace(cfg.training, max_steps_per_epoch=1))
    train(cfg, tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model"]["checkpointing"] == "full"
    # the run folder door: the model loads checkpointed, as it trained
    assert checkpointed_segments(load_run(tmp_path).model) == list(SEGMENTS)
