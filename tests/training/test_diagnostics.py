"""--diagnostics: per-module gradient norms, update ratios and selection entropy, recorded each
epoch into the history and the trackers, without changing what training does."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

from foxhunt.data import PreparedData
from foxhunt.jobs.build import BuiltRun
from foxhunt.jobs.fit import make_trainer as make_job_trainer
from foxhunt.jobs.options import JobOptions, JobSetting
from foxhunt.model import TemporalFusionTransformer
from foxhunt.model.config import TFTConfig
from foxhunt.tracking import Tracker
from foxhunt.training.diagnostics import EntropyAverage, TrainingDiagnostics, selection_entropy
from helpers import make_trainer, tiny_run, tiny_training, weights

MODULES = ("past_vsn", "lstm_encoder", "fusion_decoder", "output_head")


class Recording:
    """A tracking sink that keeps what it was given."""

    name = "recording"

    def __init__(self) -> None:
        self.logged: list[dict[str, float]] = []

    def start(self, params: Any, step: int, state: Any) -> None: ...
    def log_metrics(self, metrics: Any, step: int) -> None:
        self.logged.append(dict(metrics))

    def flush(self) -> None: ...
    def release(self) -> None: ...
    def log_run_folder(self, run_dir: Path, report: Path | None) -> None: ...
    def close(self, status: str) -> None: ...
    def state_dict(self) -> dict[str, Any]:
        return {}


def test_entropy_is_log_n_for_uniform_weights_and_zero_for_one_hot() -> None:
    uniform = torch.full((4, 3, 5), 0.2)
    entropy, share = selection_entropy(uniform)
    assert entropy == pytest.approx(math.log(5))
    assert share == pytest.approx(1.0)
    one_hot = torch.zeros(6, 5)
    one_hot[:, 2] = 1.0
    assert selection_entropy(one_hot) == (pytest.approx(0.0), pytest.approx(0.0))
    assert selection_entropy(torch.ones(3, 1))[1] is None  # one input: nothing to select


def test_entropy_average_weighs_rows_and_skips_learned_inputs() -> None:
    class Out:
        static_weights = torch.full((2, 4), 0.25)
        past_weights = torch.tensor([[[0.5, 0.5]], [[1.0, 0.0]]])  # [B, L, P]: log 2, then 0
        future_weights = torch.zeros(2, 3, 0)  # no known future inputs

    average = EntropyAverage()
    average(Out())
    record = average.record()
    assert record["vsn_entropy_share/static"] == pytest.approx(1.0)
    assert record["vsn_entropy/past"] == pytest.approx(math.log(2) / 2)
    assert record["vsn_entropy_share/past"] == pytest.approx(0.5)
    assert not any(key.endswith("/future") for key in record)


def test_diagnostics_reach_the_history_and_change_no_weight(
    tiny_data: PreparedData, tiny_model_config: TFTConfig
) -> None:
    training = tiny_training(max_steps_per_epoch=2, validate_initial=False, seed=7)
    diagnostics = TrainingDiagnostics(windows=64)
    watched = make_trainer(tiny_data, tiny_model_config, training, (diagnostics,))
    watched.fit()
    plain = make_trainer(tiny_data, tiny_model_config, training)
    plain.fit()
    after, plain_after = weights(watched), weights(plain)
    # observing moved no weight and drew no random number
    assert all(torch.equal(after[k], plain_after[k]) for k in after)
    record = watched.state.history[-1]
    for module in MODULES:
        assert record[f"grad_norm/{module}"] > 0
        assert 0 < record[f"update_ratio/{module}"] < 1
    # the tiny bars' one static input (the symbol, one category) selects nothing: no share
    assert tiny_model_config.inputs.static_cardinalities == (1,)
    assert record["vsn_entropy/static"] == pytest.approx(0.0)
    assert "vsn_entropy_share/static" not in record
    for network in ("past", "future"):
        assert 0 < record[f"vsn_entropy_share/{network}"] <= 1 + 1e-9


def test_the_job_writes_them_to_history_and_the_tracker_logs_them(
    tiny_data: PreparedData, tiny_model_config: TFTConfig, tmp_path: Path
) -> None:
    """The train job's trainer (jobs/fit.py) with --diagnostics: before the history writer
    and the caller's tracker, so both see the keys."""
    training = tiny_training(max_steps_per_epoch=1, validate_initial=False)
    torch.manual_seed(0)
    built = BuiltRun(
        config=tiny_run(model=tiny_model_config, training=training),
        data=tiny_data,
        model=TemporalFusionTransformer(tiny_model_config),
        qat=None,
        checkpointed=[],
        parameters=0,
    )
    sink = Recording()
    tracker = Tracker([sink], tmp_path, log_every=100)
    options = JobOptions(diagnostics=True, callbacks=(tracker,))
    trainer, _ = make_job_trainer(built, JobSetting(output_dir=tmp_path, options=options))
    trainer.fit()
    lines = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    epoch = next(r for r in lines if r.get("event") == "epoch")
    # one step: only the zero-started head has a gradient yet (the network's comes after)
    assert epoch["grad_norm/output_head"] > 0 and epoch["grad_norm/past_vsn"] == 0
    assert "vsn_entropy_share/past" in epoch
    logged = {tag for metrics in sink.logged for tag in metrics}
    assert "diagnostics/grad_norm/past_vsn" in logged
    assert "diagnostics/update_ratio/lstm_encoder" in logged
    assert "diagnostics/vsn_entropy_share/past" in logged
    plain, _ = make_job_trainer(built, JobSetting(output_dir=tmp_path / "plain"))
    assert not any(isinstance(c, TrainingDiagnostics) for c in plain.callbacks)  # off by default
