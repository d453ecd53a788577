"""benchmarks/inference.py --quick trains tiny runs, exports them and prints its table
(timings are not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "inference.py"


def test_inference_benchmark_prints_its_table() -> None:
    pytest.importorskip("onnxruntime")  # the onnx extra
    args = [sys.executable, str(SCRIPT), "--quick"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=900, check=True).stdout
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
