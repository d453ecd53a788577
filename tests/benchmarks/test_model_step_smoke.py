"""benchmarks/model_step.py --quick runs and prints its lines (timings are not asserted); the
model it times is the one a run builds, and its reference variant computes the same values."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
import torch

from foxhunt.bench.memory import random_batch
from foxhunt.model.config import SEGMENTS
from foxhunt.model.reference import ReferenceVariableSelectionNetwork
from foxhunt.transforms import checkpointed_segments

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "model_step.py"


@pytest.fixture(scope="module")
def model_step() -> ModuleType:
    spec = importlib.util.spec_from_file_location("model_step", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_prints_every_line(
    model_step: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    threads = torch.get_num_threads()
    try:
        # not --profile: torch.profiler's start-up alone takes ~10 s
        model_step.main(["--quick", "--threads", "1", "--compare-reference"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "threads, batch 4" in out and "parameters: " in out
    for name in ("fused", "reference"):
        assert f"\n{name}: median " in out and " samples/s" in out
    assert "reference / fused: " in out


def test_the_timed_model_is_the_model_a_run_builds(model_step: ModuleType) -> None:
    cfg = dataclasses.replace(model_step.QUICK, checkpointing="full")
    assert checkpointed_segments(model_step.build(cfg)) == list(SEGMENTS)
    assert model_step.QUICK.output == "baseline"  # the default head, whose batches carry scale


def test_reference_variant_computes_the_same_forecast(model_step: ModuleType) -> None:
    cfg = model_step.QUICK
    torch.manual_seed(0)
    model = model_step.build(cfg).eval()
    torch.nn.init.normal_(model.output_head.weight)  # it starts at zero: the forecast would not
    reference = model_step.with_reference_vsns(model).eval()  # depend on the rest of the model
    assert isinstance(reference.past_vsn, ReferenceVariableSelectionNetwork)
    batch = random_batch(cfg, 3)
    with torch.no_grad():
        fused, plain = model(batch), reference(batch)
    torch.testing.assert_close(plain.quantiles, fused.quantiles, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(plain.past_weights, fused.past_weights, rtol=1e-5, atol=1e-5)
