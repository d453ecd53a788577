"""benchmarks/gpu_check.py --dry-run: every section runs on CPU at a tiny size and reports a
status, so the script a GPU session runs once cannot rot unnoticed. Timings are not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
SECTIONS = ("pytest_gpu", "memory_limit", "amp_bf16", "fused_vsn", "profiler")


def test_dry_run_reports_every_section(tmp_path: Path) -> None:
    path = [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    args = [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--dry-run", "--out", str(tmp_path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    sections = report["sections"]
    assert tuple(sections) == SECTIONS
    # "unsupported": a CPU whose oneDNN has no bf16 LSTM; anything else is a broken section
    allowed = {name: {"ok"} for name in SECTIONS} | {"amp_bf16": {"ok", "unsupported"}}
    statuses = {name: s["status"] for name, s in sections.items()}
    assert all(statuses[n] in allowed[n] for n in SECTIONS), (statuses, done.stdout[-3000:])
    assert done.returncode == 0, done.stderr[-3000:]
    assert report["dry_run"] and report["device"] == "cpu"
    assert all(s["seconds"] >= 0 and s["summary"] for s in sections.values())

    assert sections["pytest_gpu"]["failed"] == 0 and sections["pytest_gpu"]["passed"] == 0
    memory = sections["memory_limit"]
    assert memory["limit"].startswith("emulated") and memory["limit_gb"] == 4
    assert {r["label"] for r in memory["modes"]} == {"plain", "selective", "full"}
    assert all(r["fits"] and r["peak_bytes"] > 0 for r in memory["modes"])
    assert max(sections["fused_vsn"]["max_rel_diff"].values()) <= 1e-4
    profiler = sections["profiler"]
    assert profiler["backends"] == ["cpu"] and profiler["leak_warned_at_step"] is not None

    table = (tmp_path / "gpu_check.md").read_text()
    assert "| section | status | seconds | result |" in table
    assert all(f"| {name} | " in table for name in SECTIONS)
    assert "| batch | mode | under the limit |" in table


def test_a_raising_section_is_recorded_as_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import gpu_check

    def broken(limit_s: float) -> dict[str, object]:
        raise ValueError("planted")

    result = gpu_check._run_section("broken", broken, 30.0)
    assert result["status"] == "error" and "ValueError: planted" in result["error"]
    report = {
        "device_name": "CPU",
        "device": "cpu",
        "torch": "x",
        "commit": None,
        "started_utc": "now",
        "dry_run": True,
        "sections": {"broken": result},
    }
    assert "| broken | error |" in gpu_check.to_markdown(report)
