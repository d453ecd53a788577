"""benchmarks/startup.py trains its tiny run and prints its table (timings are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "startup.py"


def test_startup_benchmark_prints_its_table() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, str(SCRIPT), "--quick"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True, env=env)
    rows = [line for line in out.stdout.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [
        "python -c pass",
        "foxhunt --help",
        "foxhunt train --help",
        "foxhunt predict RUN --parquet-file F",
    ]
    for row in rows:  # two numbers each: wall and CPU seconds
        wall, cpu = (float(cell) for cell in row.split("|")[2:4])
        assert wall > 0 and cpu >= 0
    assert "median of 1" in out.stdout and "busy meanwhile" in out.stdout
