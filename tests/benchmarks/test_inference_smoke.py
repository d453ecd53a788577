"""benchmarks/inference.py and benchmarks/export_accuracy.py on tiny runs: they export the runs
every way and print their tables (timings and losses are not asserted)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """A tiny FP32 and QAT run, trained as ``inference.py --quick`` trains them."""
    pytest.importorskip("onnxruntime")  # the onnx extra
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from inference import train_runs
    finally:
        sys.path.remove(str(BENCHMARKS))
    out = tmp_path_factory.mktemp("runs")
    fp32, qat = train_runs(argparse.Namespace(quick=True, data=None), out)
    # both benchmarks export the runs every way: the second reuses the first's folders
    return ["--fp32-run", str(fp32), "--qat-run", str(qat), "--exports", str(out / "exports")]


def run(script: str, *args: str) -> str:
    cmd = [sys.executable, str(BENCHMARKS / script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=True).stdout


def test_inference_benchmark_prints_its_table(runs: list[str]) -> None:
    out = run("inference.py", "--quick", *runs)
    assert "| route | 1 window | FP32 eager / it | int8 kernel / it | batch 1024 |" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " ms |" in line]
    assert [r.split(" | ")[0][2:] for r in rows] == [
        "PyTorch eager FP32",
        "foxhunt int8 kernel (QAT)",
        "ONNX Runtime FP32",
        "ONNX Runtime int8 QDQ (QAT scales)",
        "ONNX Runtime int8 QDQ (calibrated)",
    ]
    assert "1.00x" in rows[0] and "onnxruntime" in out


def test_export_accuracy_benchmark_scores_every_route(runs: list[str]) -> None:
    out = run("export_accuracy.py", *runs)
    assert (Path(runs[-1]) / "exports.json").is_file()  # the exports were reused
    rows = [line for line in out.splitlines() if line.startswith("| ") and "%" in line]
    assert len(rows) == 6 and "+0.000%" in rows[0]  # FP32 against itself
    assert "all within 2% of FP32:" in out and "onnxruntime" in out
