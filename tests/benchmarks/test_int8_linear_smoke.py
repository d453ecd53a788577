"""benchmarks/int8_linear.py runs and prints its table (timings are not asserted)."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from foxhunt.quant.kernel import load

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "int8_linear.py"


def test_int8_linear_benchmark_prints_its_table(
    require_kernel: Callable[[ModuleType | None, str], ModuleType],
) -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("foxhunt's int8 kernel is x86-64 only")
    if require_kernel(load(), "the int8 kernel").simd() == "none":
        pytest.skip("this CPU has neither AVX2 nor AVX-512 VNNI: the int8 kernel does nothing")
    args = [sys.executable, str(SCRIPT), "--rows", "1", "5", "--in-features", "8"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, check=True).stdout
    assert "| rows | FP32 | reference int8 | foxhunt int8 |" in out
    assert out.count("\n| ") == 4  # header, rule, and a line per row count
