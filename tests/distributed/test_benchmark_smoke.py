"""benchmarks/distributed.py runs and reports every configuration (timings not asserted)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "distributed.py"


@pytest.mark.slow
def test_benchmark_reports_one_and_two_processes() -> None:
    command = [sys.executable, str(BENCHMARK), "--steps", "1", "--warmup", "1", "--cores", "1"]
    done = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # --cores 1: one process with its one thread, then two DDP processes of one thread each
    assert [(r["processes"], r["threads_per_process"]) for r in report["results"]] == [
        (1, 1),
        (2, 1),
    ]
    assert all(r["samples_per_s"] > 0 for r in report["results"])
