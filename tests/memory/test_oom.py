"""Budgets from the command line, and the out-of-memory path simulated on CPU."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

from foxhunt.errors import ConfigError
from foxhunt.jobs.train import JobOptions, train
from foxhunt.memory.oom import (
    AUTO,
    OptimizerStepOutOfMemory,
    OutOfMemory,
    budget_bytes,
    fit_with_oom_guard,
    oom_message,
    optimizer_step_oom,
    parse_budget,
)
from foxhunt.storage.local import LocalStorage
from helpers import tiny_job, tiny_model, tiny_run, tiny_training


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512MB", 512 << 20),
        ("4GB", 4 << 30),
        ("4GiB", 4 << 30),
        ("4g", 4 << 30),
        ("1.5 GB", 1.5 * (1 << 30)),
        ("1024", 1024),
        ("64KiB", 64 << 10),
    ],
)
def test_parse_budget_sizes(text: str, expected: float) -> None:
    assert parse_budget(text) == expected


def test_parse_budget_auto_and_errors() -> None:
    assert parse_budget("auto") == AUTO and parse_budget(" AUTO ") == AUTO
    for bad in ("", "4 parsecs", "-1GB", "0MB", "GB"):
        with pytest.raises(ConfigError, match="--memory-budget"):
            parse_budget(bad)


def test_auto_budget_is_refused_on_cpu() -> None:
    with pytest.raises(ConfigError, match=r"on CPU.*--memory-budget 8GB"):
        budget_bytes(AUTO, torch.device("cpu"))
    assert budget_bytes(1000.0, torch.device("cpu"), 0.8) == 800.0


def out_of_memory() -> torch.OutOfMemoryError:
    return torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_oom_message_names_the_flags() -> None:
    message = oom_message(out_of_memory(), batch_size=64, budget=None)
    for flag in ("--memory-budget", "--use-gradient-checkpointing", "--batch-size 32", "--resume"):
        assert flag in message
    assert "Tried to allocate 2.00 GiB" in message
    assert "smaller --memory-budget than 4096MB" in oom_message(
        out_of_memory(), batch_size=1, budget=4 << 30
    )


def test_oom_without_auto_ends_with_the_message() -> None:
    replans: list[int] = []

    def fit() -> str:
        raise out_of_memory()

    with pytest.raises(OutOfMemory, match="--use-gradient-checkpointing") as info:
        fit_with_oom_guard(fit, batch_size=8, budget=4e9, replan=lambda: replans.append(1))
    assert isinstance(info.value.__cause__, torch.OutOfMemoryError)
    assert not replans  # a fixed budget is the user's: no silent re-plan


def test_auto_replans_once_and_continues() -> None:
    calls: list[str] = []

    def fit() -> str:
        calls.append("fit")
        if calls.count("fit") == 1:
            raise out_of_memory()
        return "done"

    result = fit_with_oom_guard(
        fit, batch_size=8, budget=AUTO, replan=lambda: calls.append("replan")
    )
    assert result == "done" and calls == ["fit", "replan", "fit"]


def test_auto_gives_up_after_one_replan() -> None:
    calls: list[str] = []

    def fit() -> str:
        calls.append("fit")
        raise out_of_memory()

    with pytest.raises(OutOfMemory, match="after re-planning"):
        fit_with_oom_guard(fit, batch_size=8, budget=AUTO, replan=lambda: calls.append("replan"))
    assert calls == ["fit", "replan", "fit"]


def test_other_errors_pass_through() -> None:
    def fit() -> str:
        raise ValueError("not memory")

    with pytest.raises(ValueError, match="not memory"):
        fit_with_oom_guard(fit, batch_size=8, budget=AUTO, replan=lambda: None)


def test_oom_in_the_optimizer_step_ends_the_run_even_with_auto() -> None:
    """The weights may be partly updated: re-planning and carrying on would train from them."""
    replans: list[int] = []

    def fit() -> str:
        with optimizer_step_oom():
            raise out_of_memory()

    with pytest.raises(OutOfMemory, match="in the optimizer step") as info:
        fit_with_oom_guard(fit, batch_size=8, budget=AUTO, replan=lambda: replans.append(1))
    assert isinstance(info.value.__cause__, OptimizerStepOutOfMemory)
    assert not replans
    for flag in ("--memory-budget", "--use-gradient-checkpointing", "--batch-size 4", "--resume"):
        assert flag in str(info.value)
    assert "Tried to allocate 2.00 GiB" in str(info.value)


def test_oom_in_optimizer_step_of_a_job_keeps_the_last_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third optimizer step updates the weights, then runs out of memory: the run ends
    with the flags, the checkpoint of step 2 is the latest, and resuming from it trains
    exactly as a run that never ran out."""
    config = tiny_run(model=tiny_model(dropout=0.2), training=tiny_training(batch_size=16))
    straight = tiny_job(tmp_path / "straight", config)
    step, calls = torch.optim.AdamW.step, []

    def step_then_oom(self: torch.optim.AdamW, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        result = step(self, *args, **kwargs)
        if len(calls) == 3:
            raise out_of_memory()
        return result

    monkeypatch.setattr(torch.optim.AdamW, "step", step_then_oom)
    run, options = tmp_path / "run", JobOptions(checkpoint_every=1, keep_checkpoints=10)
    with pytest.raises(OutOfMemory, match=r"in the optimizer step .*--resume.*--batch-size 8"):
        train(config, run, options=options)
    monkeypatch.undo()
    assert len(calls) == 3
    assert LocalStorage(run / "checkpoints").list() == ["step-000000001", "step-000000002"]
    resumed = train(config, run, options=replace(options, resume=True))
    assert resumed.metrics["test"] == straight.metrics["test"]
