"""benchmarks/data_prep.py runs and prints its table (timings are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "data_prep.py"


def test_data_prep_benchmark_prints_its_table() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, str(SCRIPT), "--days", "2"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True, env=env)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("wrote 27,120 rows (10 instruments x 2 days")
    rows = [line for line in lines if line.startswith(("one file", "daily folder"))]
    assert len(rows) == 4 and sum("27,120 rows" in line for line in rows) == 2
    library = next(line for line in lines if line.startswith("features"))
    assert "tft-225" in library and "27,120 rows" in library
    assert int(library.split(" windows, ")[1].split()[0]) >= 220  # observed + known inputs
