"""Smoke test of benchmarks/throughput.py at a tiny shape: it runs and reports every field.

Timings are not asserted: they depend on the machine and on whatever else runs on it.
pytorch-forecasting is measured too when it is importable (the bench environment).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def throughput() -> ModuleType:
    spec = importlib.util.spec_from_file_location("throughput", BENCHMARKS / "throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["throughput"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _tiny_config(throughput: ModuleType) -> Any:
    shape = throughput.ModelShape(
        batch_size=4, lookback=8, horizon=2, hidden_size=8, variable_hidden_size=4,
        attention_heads=2, quantiles=(0.1, 0.5, 0.9), num_static=2, num_observed=3,
        num_known=2,
    )  # fmt: skip
    return throughput.BenchConfig(
        shape=shape,
        steps=2,
        warmup=1,
        repeats=2,
        threads=1,
        loader_days=3,
        latency_reps=2,
        inference_batch=16,
        inference_reps=1,
        pf_inference_batch=True,
        accuracy_shape=shape,
        accuracy_steps=2,
        accuracy_eval_batches=1,
    )


def test_report_has_every_field(throughput: ModuleType) -> None:
    report = throughput.run_benchmark(_tiny_config(throughput))
    data = report.to_dict()
    json.dumps(data)  # the --json output is serializable

    fox = data["foxhunt"]
    assert fox["parameters"] > 0
    assert len(fox["step_s"]) == 2 and fox["median_step_s"] > 0 and fox["samples_per_s"] > 0
    assert len(fox["busy_cores"]) == len(fox["system_share"]) == len(fox["other_cores"]) == 2
    assert fox["saved_for_backward_bytes"] > 0
    assert fox["inference"]["latency_ms"] > 0
    assert fox["inference"]["throughput_windows_per_s"] > 0

    if throughput.load_pf() is None:
        assert data["pf"] is None and "pip install -e .[bench]" in data["pf_missing"]
        assert data["ratios"] == [] and data["median_ratio"] is None
    else:
        assert data["pf"]["parameters"] > 0 and data["pf"]["saved_for_backward_bytes"] > 0
        assert len(data["ratios"]) == 2 and data["median_ratio"] > 0

    loader = data["loader"]
    assert loader["error"] is None, loader["error"]
    assert loader["windows"] > 0 and loader["windows_per_s"] > 0
    assert data["loader_to_train_ratio"] > 0

    accuracy = data["accuracy"]
    assert "foxhunt" in accuracy["eval_loss"] and accuracy["oracle_loss"] > 0
    assert set(accuracy["train_loss_last"]) == set(accuracy["eval_loss"])
    assert {"loadavg_start", "loadavg_end", "cpu_count", "repeats_discarded"} <= set(
        data["machine"]
    )

    text = throughput.format_report(report)
    assert "training samples/s" in text and "saved for backward" in text


def test_pf_missing_still_reports_foxhunt(throughput: ModuleType) -> None:
    config = dataclasses.replace(
        _tiny_config(throughput), include_pf=False, repeats=1, loader_days=0, accuracy_steps=0
    )
    report = throughput.run_benchmark(config)
    assert report.pf is None and report.foxhunt.samples_per_s > 0


def test_cli_flags(throughput: ModuleType) -> None:
    argv = ["--steps", "3", "--repeats", "2", "--json", "--no-pf", "--save", "report.json"]
    config, as_json, save = throughput._parse(argv)
    assert as_json and config.steps == 3 and config.repeats == 2 and not config.include_pf
    assert save is not None and save.name == "report.json"
