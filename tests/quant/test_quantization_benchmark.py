"""benchmarks/quantization.py at a tiny size on the real ES bars (skipped without them).

Timings and losses are not asserted: they depend on the machine and on the tiny training.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("quantization", BENCHMARKS / "quantization.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["quantization"] = module
    spec.loader.exec_module(module)
    return module


def test_benchmark_produces_the_table(bench: ModuleType, tmp_path: Path) -> None:
    if not bench.DEFAULT_DATA.is_file():
        pytest.skip(f"{bench.DEFAULT_DATA} not found (see ../shared/data/README.md)")
    args = argparse.Namespace(
        data=bench.DEFAULT_DATA, lookback=16, horizon=4, hidden_size=8, variable_hidden_size=4,
        epochs=1, max_steps_per_epoch=2, freeze_after=1, seed=0, threads=1, repeats=1,
    )  # fmt: skip
    result = bench.benchmark(args, tmp_path)
    assert set(result["file_bytes"]) == {
        "FP32",
        "QAT-int8 (export --int8)",
        "PTQ-int8 (export --dynamic)",
    }
    assert len(result["test_mean_quantile_loss_bp"]) == 4
    assert result["file_bytes"]["QAT-int8 (export --int8)"] < result["file_bytes"]["FP32"]
    reference_rows = {"QAT-int8, reference layers", "PTQ-int8, reference layers"}
    assert reference_rows <= set(result["latency_ms"]["batch 1"])
    table = bench.table(result)
    assert table.count("\n| ") == 7  # header rule + 4 models + 2 with their reference layers
