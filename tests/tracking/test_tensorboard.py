"""--logger tensorboard: event files that TensorBoard's own reader reads back."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from tracked import train

SKIP = "the tracking extra: pip install -e .[tracking]"
EventAccumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator", reason=SKIP
).EventAccumulator


def scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    events = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    events.Reload()
    return {
        tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]
    }


def epochs(run: Path) -> list[dict]:
    lines = (run / "history.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("event") == "epoch"]


def test_every_epoch_loss_and_step_scalars_are_read_back(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert train(run, "--logger", "tensorboard", "--no-report", "--lr-schedule", "cosine") == 0
    found = scalars(run / "tensorboard")
    history = epochs(run)
    assert len(history) == 2
    for key in ("train_loss", "val_loss"):
        logged = [value for _, value in found[f"epoch/{key}"]]
        assert logged == pytest.approx([r[key] for r in history], rel=1e-6), key
    assert [step for step, _ in found["epoch/val_loss"]] == [3, 6]  # at the optimizer step
    for tag in ("train/loss", "train/lr", "train/grad_norm", "train/step_seconds"):
        assert [step for step, _ in found[tag]] == [1, 2, 3, 4, 5, 6], tag
    lr = [value for _, value in found["train/lr"]]
    assert lr[0] > lr[-1] and lr == sorted(lr, reverse=True)  # the cosine schedule, logged
    assert all(value > 0 for _, value in found["memory/peak_mb"])
    assert [value for _, value in found["train/skipped_steps"]] == [0.0] * 6
    metrics = json.loads((run / "metrics.json").read_text())
    final = found["final/test/mean_quantile_loss"]
    assert final == [(6, pytest.approx(metrics["test"]["mean_quantile_loss"]))]
    garch = found["final/baselines/garch_t/mean_quantile_loss"][0][1]
    assert math.isclose(garch, metrics["baselines"]["garch_t"]["mean_quantile_loss"], rel_tol=1e-6)


def test_tracking_leaves_the_weights_alone(tmp_path: Path) -> None:
    plain, tracked = tmp_path / "plain", tmp_path / "tracked"
    flags = ("--no-report", "--lr-schedule", "onecycle")
    assert train(plain, *flags, epochs=1) == 0
    assert train(tracked, *flags, "--logger", "tensorboard", epochs=1) == 0
    weights = "model.safetensors"
    assert (plain / weights).read_bytes() == (tracked / weights).read_bytes()


def test_a_resume_continues_the_curves_in_the_same_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert train(run, "--logger", "tensorboard", "--no-report") == 0
    flags = ("--resume", str(run), "--logger", "tensorboard", "--no-report")
    assert train(run, *flags, epochs=3) == 0
    found = scalars(run / "tensorboard")
    assert [step for step, _ in found["epoch/train_loss"]] == [3, 6, 9]
    assert [step for step, _ in found["train/loss"]] == list(range(1, 10))
    assert [value for _, value in found["epoch/epoch"]] == [1.0, 2.0, 3.0]


def test_a_custom_folder(tmp_path: Path) -> None:
    run, logdir = tmp_path / "run", tmp_path / "tb"
    flags = ("--logger", "tensorboard", "--tracking-dir", str(logdir), "--no-report")
    assert train(run, *flags, epochs=1) == 0
    assert not (run / "tensorboard").exists()
    assert len(scalars(logdir)["epoch/val_loss"]) == 1


def test_an_overwrite_writes_fresh_curves_into_the_renamed_folder(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert train(run, "--logger", "tensorboard", "--no-report", epochs=1) == 0
    flags = ("--overwrite", "--logger", "tensorboard", "--no-report", "--lr-schedule", "cosine")
    assert train(run, *flags) == 0  # written in a staging folder, renamed over the old run
    found = scalars(run / "tensorboard")
    assert [step for step, _ in found["epoch/val_loss"]] == [3, 6]
    lr = [value for _, value in found["train/lr"]]
    assert len(lr) == 6 and lr[0] > lr[-1]  # this run's schedule, not the old constant one
    assert len(found["final/test/mean_quantile_loss"]) == 1
