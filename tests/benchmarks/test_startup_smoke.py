"""benchmarks/startup.py on a tiny run trained as it trains one: it prints its table (timings
are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_startup_benchmark_prints_its_table(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from startup import tiny_run
    finally:
        sys.path.remove(str(BENCHMARKS))
    run, data = tiny_run(tmp_path)  # here, where torch is already imported
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, str(BENCHMARKS / "startup.py"), "--quick", "--run", str(run)]
    args += ["--data", str(data)]
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
