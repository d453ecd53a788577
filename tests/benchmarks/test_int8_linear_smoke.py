"""benchmarks/int8_linear.py runs and prints its table (timings are not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from foxhunt.quant.kernel import available

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "int8_linear.py"


def test_int8_linear_benchmark_prints_its_table() -> None:
    if available() is None:
        pytest.skip("foxhunt's int8 kernel is not available here")
    args = [sys.executable, str(SCRIPT), "--rows", "1", "5", "--in-features", "8"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    assert "| rows | FP32 | torch.ao int8 | foxhunt int8 |" in out
    assert out.count("\n| ") == 4  # header, rule, and a line per row count
