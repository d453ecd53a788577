"""benchmarks/data_prep.py --quick runs and prints its table (timings are not asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "data_prep.py"


def test_data_prep_benchmark_prints_its_table() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    args = [sys.executable, str(SCRIPT), "--quick"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True, env=env)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("wrote 40,680 rows (10 instruments x 3 days")
    assert lines[1].startswith("before: load ") and lines[-1].startswith("after: load ")
    rows = [line.split() for line in lines if line.startswith(("one file", "daily folder"))]
    # source (two words), features, bars, instruments, inputs, windows, wall, CPU, peak GB
    table = {(r[0] + " " + r[1], r[2]): r[3:10] for r in rows}
    assert sorted(table) == [
        ("daily folder", "default"),
        ("daily folder", "read"),
        ("one file", "default"),
        ("one file", "read"),
        ("one file", "tft-225"),
    ]
    for bars, instruments, _inputs, _windows, wall, cpu, peak in table.values():
        assert (bars, instruments) == ("40,680", "10")
        assert float(wall) > 0 and float(cpu) > 0 and float(peak) > 0
    default, library = table[("one file", "default")], table[("one file", "tft-225")]
    assert int(default[2]) == 13 and int(library[2]) >= 220  # observed + known inputs
    assert int(default[3].replace(",", "")) > 0 and library[3] != "-"
    assert "for the full year" in next(line for line in lines if " tft-225 " in line)
