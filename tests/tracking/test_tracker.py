"""The tracker on a trainer, with a sink that records: what reaches a logger, and when."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from foxhunt.data import PreparedData
from foxhunt.errors import FoxhuntError
from foxhunt.model.config import TFTConfig
from foxhunt.tracking import Tracker
from helpers import fitted, make_trainer, tiny_model, tiny_training
from helpers import tiny_data as prepare_tiny_data


class Recording:
    name = "recording"

    def __init__(self) -> None:
        self.started: tuple[dict[str, Any], int, dict[str, Any]] | None = None
        self.logged: list[tuple[int, dict[str, float]]] = []
        self.closed: str | None = None
        self.released = False

    def start(self, params: Mapping[str, Any], step: int, state: Mapping[str, Any]) -> None:
        self.started = (dict(params), step, dict(state))

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self.logged.append((step, dict(metrics)))

    def flush(self) -> None: ...

    def release(self) -> None:
        self.released = True

    def log_run_folder(self, run_dir: Path, report: Path | None) -> None: ...

    def close(self, status: str) -> None:
        self.closed = status

    def state_dict(self) -> dict[str, Any]:
        return {"id": "abc"}

    def tagged(self, tag: str) -> list[tuple[int, float]]:
        return [(step, m[tag]) for step, m in self.logged if tag in m]


@pytest.fixture(scope="module")
def data() -> PreparedData:
    return prepare_tiny_data()


@pytest.fixture(scope="module")
def model_config(data: PreparedData) -> TFTConfig:
    return fitted(tiny_model(), data)


def test_skipped_steps_are_logged_whenever_they_happen(
    data: PreparedData, model_config: TFTConfig, tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"training": {"lr": 0.001}, "versions": {}}))
    sink = Recording()
    tracker = Tracker([sink], tmp_path, log_every=100)  # no step is on the schedule
    training = tiny_training(epochs=2, max_steps_per_epoch=4)
    trainer = make_trainer(data, model_config, training, (tracker,))
    real, calls = trainer.compute_loss, {"n": 0}

    def poisoned(batch: Any) -> Any:
        calls["n"] += 1
        return real(batch) * math.nan if calls["n"] == 3 else real(batch)

    trainer.compute_loss = poisoned  # type: ignore[method-assign]
    trainer.fit()
    assert sink.started == ({"training.lr": 0.001}, 0, {})  # config.json, versions left out
    assert sink.tagged("train/skipped_steps") == [(2, 1.0)]  # only the skipped one, at step 2
    assert "train/grad_norm" not in sink.logged[0][1]  # NaN for a skipped step: left out
    assert sink.tagged("epoch/skipped_steps") == [(3, 1.0), (7, 1.0)]
    assert [v for _, v in sink.tagged("epoch/epoch")] == [1.0, 2.0]
    assert tracker.state_dict() == {"sinks": {"recording": {"id": "abc"}}, "step": 7}
    tracker.log_results({"unit": "bp", "test": {"mean": 1.5, "quantile_loss": [1, 2]}})
    assert sink.released and sink.closed is None
    tracker.finish(tmp_path, None)
    assert sink.logged[-1] == (7, {"final/test/mean": 1.5, "final/test/quantile_loss/0": 1.0,
                                   "final/test/quantile_loss/1": 2.0})  # fmt: skip
    assert sink.closed == "FINISHED"
    tracker.close()  # after finish: nothing more
    assert sink.closed == "FINISHED"


class Broken(Recording):
    name = "broken"

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        raise OSError("disk full")


class Unstartable(Recording):
    name = "unstartable"

    def start(self, params: Mapping[str, Any], step: int, state: Mapping[str, Any]) -> None:
        raise ValueError("no such host\nmore detail")


def test_a_failing_logger_is_dropped_and_training_goes_on(
    data: PreparedData, model_config: TFTConfig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good, broken = Recording(), Broken()
    tracker = Tracker([broken, good], tmp_path, log_every=1)
    trainer = make_trainer(data, model_config, tiny_training(), (tracker,))
    trainer.fit()
    assert tracker.sinks == [good] and len(good.tagged("train/loss")) == 3
    assert "tracking: broken failed (OSError: disk full); it logs no more" in caplog.text


def test_a_logger_that_cannot_start_is_one_line(
    data: PreparedData, model_config: TFTConfig, tmp_path: Path
) -> None:
    tracker = Tracker([Unstartable()], tmp_path)
    trainer = make_trainer(data, model_config, tiny_training(), (tracker,))
    with pytest.raises(
        FoxhuntError, match=r"--logger unstartable could not start \(no such host\)"
    ):
        trainer.fit()


def test_a_resumed_tracker_hands_each_sink_its_saved_state(
    data: PreparedData, model_config: TFTConfig, tmp_path: Path
) -> None:
    sink = Recording()
    tracker = Tracker([sink], tmp_path, log_every=1)
    tracker.load_state_dict({"sinks": {"recording": {"id": "abc"}}, "step": 5})
    assert tracker.state_dict()["sinks"] == {"recording": {"id": "abc"}}  # before it starts
    trainer = make_trainer(data, model_config, replace(tiny_training(), epochs=1), (tracker,))
    trainer.state.global_step = 5  # as a restored checkpoint leaves it
    trainer.fit()
    assert sink.started is not None and sink.started[1:] == (5, {"id": "abc"})
    assert [step for step, _ in sink.tagged("train/loss")] == [6, 7, 8]
    tracker.close()
    assert sink.closed == "FAILED"  # closed without finish: the run did not complete
