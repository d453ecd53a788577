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
        shapes=(("tiny-wide", dataclasses.replace(shape, hidden_size=12, lookback=10)),),
        large_steps=1,
        sgemm_size=64,
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

    rows = {row["label"]: row for row in data["entries"]}
    fox_rows = {"foxhunt", "tiny-wide foxhunt", "tiny-wide foxhunt checkpointed"}
    assert fox_rows <= set(rows)
    for row in rows.values():
        assert len(row["round_s"]) == 2 and row["median_s"] > 0 and row["spread"] >= 0
        assert row["gflop_per_step"] > 0 and row["gflops"] > 0
        assert row["saved_for_backward_bytes"] > 0
    # checkpointing keeps less for backward than the plain model at the same shape
    assert (
        rows["tiny-wide foxhunt checkpointed"]["saved_for_backward_bytes"]
        < rows["tiny-wide foxhunt"]["saved_for_backward_bytes"]
    )
    assert len(data["sgemm_gflops"]) == 2 and min(data["sgemm_gflops"]) > 0
    assert "same-run sgemm" in text and "GFLOP/s" in text


def test_pf_missing_still_reports_foxhunt(throughput: ModuleType) -> None:
    config = dataclasses.replace(
        _tiny_config(throughput), include_pf=False, repeats=1, loader_days=0, accuracy_steps=0
    )
    report = throughput.run_benchmark(config)
    assert report.pf is None and report.foxhunt.samples_per_s > 0


def test_contention_starts_and_stops_a_competitor(throughput: ModuleType) -> None:
    config = dataclasses.replace(
        _tiny_config(throughput), include_pf=False, loader_days=0, accuracy_steps=0,
        shapes=(), contention=True,
    )  # fmt: skip
    report = throughput.run_benchmark(config)
    labels = [row.label for row in report.entries]
    assert labels == ["foxhunt", "foxhunt, 1 thread"]
    assert "one competing 2-thread process" in throughput.format_report(report)


def test_quick_and_shapes_flags(throughput: ModuleType) -> None:
    config, _, _ = throughput._parse(["--quick", "--shapes", "tft-225", "--contention"])
    assert config.repeats == 2 and config.accuracy_steps == 0 and config.contention
    assert [name for name, _ in config.shapes] == ["tft-225"]
    assert config.shapes[0][1].hidden_size == 256
    assert throughput._parse(["--shapes", ""])[0].shapes == ()
    with pytest.raises(SystemExit):
        throughput._parse(["--shapes", "nope"])


def test_cli_flags(throughput: ModuleType) -> None:
    argv = ["--steps", "3", "--repeats", "2", "--json", "--no-pf", "--save", "report.json"]
    config, as_json, save = throughput._parse(argv)
    assert as_json and config.steps == 3 and config.repeats == 2 and not config.include_pf
    assert save is not None and save.name == "report.json"
