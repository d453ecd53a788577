"""benchmarks/gpu_check.py --dry-run: every section runs on CPU at a tiny size (on windows of
the suite's synthetic bars, as the GPU run's on the ES bars) and reports a status, so the
script a GPU session runs once cannot rot unnoticed. Timings are not asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
SECTIONS = ("pytest_gpu", "memory_limit", "amp_bf16", "throughput", "fused_vsn", "profiler")


def test_dry_run_reports_every_section(tmp_path: Path, bars_file: Path) -> None:
    path = [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    args = [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--dry-run", "--out", str(tmp_path)]
    args += ["--parquet-file", str(bars_file)]
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

    gpu_tests = sections["pytest_gpu"]  # the gpu tests of one file, each skipped on CPU
    assert gpu_tests["failed"] == 0 and gpu_tests["passed"] == 0 and gpu_tests["skipped"] >= 1
    memory = sections["memory_limit"]
    assert memory["limit"].startswith("emulated") and memory["limit_gb"] == 4
    assert {r["label"] for r in memory["modes"]} == {"plain", "selective", "full"}
    assert all(r["fits"] and r["peak_bytes"] > 0 for r in memory["modes"])
    # the bars' windows with the tft-225 feature set, not the preset's random shape
    assert memory["data"].startswith(f"real windows of {bars_file.name}, tft-225 feature set")
    amp = sections["amp_bf16"]
    if amp["status"] == "ok":
        assert amp["data"].startswith(f"real windows of {bars_file.name}")
        assert amp["steps"] == amp["steps_planned"] == len(amp["losses"]["bf16"])
        assert amp["tail_mean_rel_diff"] <= amp["tolerance"]
        # bf16 autocast reaches the model: the gradients differ, a little
        assert amp["least_gradient_cosine"] <= amp["first_gradient_cosine"] < 1.0
    rows = {r["precision"]: r for r in sections["throughput"]["dle_electricity"]["rows"]}
    assert set(rows) == {"tf32", "fp16", "bf16"} and rows["tf32"]["status"] == "ok"
    assert rows["tf32"]["nvidia_a100_items_per_s"] == 10173
    assert rows["tf32"]["samples_per_s"] > 0
    reference = sections["throughput"]["reference"]
    assert "foxhunt" in reference["libraries"]
    # pytorch-forecasting compared where it imports, else a line says it was skipped
    assert (reference["pf_missing"] is None) == ("pytorch-forecasting" in reference["libraries"])
    assert max(sections["fused_vsn"]["max_rel_diff"].values()) <= 1e-4
    profiler = sections["profiler"]
    assert profiler["backends"] == ["cpu"] and profiler["leak_warned_at_step"] is not None
    assert profiler["readings"]["ok"] and profiler["readings"]["nvml"] is None

    table = (tmp_path / "gpu_check.md").read_text()
    assert "| section | status | seconds | result |" in table
    assert all(f"| {name} | " in table for name in SECTIONS)
    assert "| batch | mode | under the limit |" in table
    assert "| precision | batch | step ms | samples/s | NVIDIA A100 items/s | ratio |" in table
    assert "| library | step ms | samples/s |" in table


def test_without_bars_the_batches_say_they_are_synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import torch

    from _gpu_children import _data_label
    from _gpu_data import training_batches
    from _gpu_sizes import Sizes

    cfg = Sizes.tiny().amp_config
    data = training_batches(cfg, 2, 3, parquet=None, device=torch.device("cpu"))
    assert data.label.startswith("synthetic 225-input shape") and len(data.batches) == 3
    assert data.at(4) is data.batches[1]
    report = {"config": {**cfg.to_dict(), "static_cardinalities": None}}
    assert _data_label(report, None).startswith("synthetic 225-input shape (5 static")


def test_a_profiler_peak_above_the_os_high_water_mark_is_a_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import torch

    from _gpu_memcheck import cross_check
    from foxhunt.memory.profiler import MemorySnapshot

    cpu = torch.device("cpu")
    fine = cross_check(MemorySnapshot("cpu", used_mb=1.0, total_mb=1e6, peak_mb=1.0), cpu)
    assert fine["ok"] and not fine["problems"]
    bad = cross_check(MemorySnapshot("cpu", used_mb=1.0, total_mb=1e6, peak_mb=1e9), cpu)
    assert not bad["ok"] and "OS max RSS" in bad["problems"][0]


def test_an_unknown_section_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import gpu_check

    with pytest.raises(SystemExit) as stop:
        gpu_check.main(["--dry-run", "--out", str(tmp_path), "--sections", "pytest_gpu,bogus"])
    assert stop.value.code == 2


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


def test_the_cuda_readings_are_compared_with_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA branch, which CI never runs, on a fake allocator and a fake NVML."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import types

    import torch

    from _gpu_memcheck import MiB, cross_check
    from foxhunt.memory.profiler import MemorySnapshot

    class NVMLError(Exception):
        pass

    def fake_nvml(used_mb: float, listed: bool) -> types.ModuleType:
        def processes(handle: object) -> list[object]:
            if not listed:
                raise NVMLError("Not Supported")
            return [types.SimpleNamespace(pid=os.getpid(), usedGpuMemory=int(used_mb * MiB))]

        return types.SimpleNamespace(  # type: ignore[return-value]
            NVMLError=NVMLError,
            nvmlInit=lambda: None,
            nvmlDeviceGetHandleByIndex=lambda index: index,
            nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(
                used=int(used_mb * MiB), total=80_000 * MiB
            ),
            nvmlDeviceGetComputeRunningProcesses=processes,
        )

    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 900 * MiB)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 1000 * MiB)
    snap = MemorySnapshot("cuda", used_mb=500, total_mb=80_000, peak_mb=900, reserved_mb=1000)
    cuda = torch.device("cuda", 0)

    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(1600, listed=True))
    good = cross_check(snap, cuda)
    assert good["ok"], good["problems"]
    assert good["nvml"]["process_used_mb"] == 1600

    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(600, listed=False))
    low = cross_check(snap, cuda)  # NVML below what the allocator holds: a finding
    assert not low["ok"] and any("NVML used 600 < allocator reserved" in p for p in low["problems"])
    assert low["nvml"]["process_error"].startswith("NVMLError")

    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(1600, listed=True))
    stale = MemorySnapshot("cuda", used_mb=500, total_mb=80_000, peak_mb=700, reserved_mb=1000)
    assert "max_memory_allocated" in cross_check(stale, cuda)["problems"][0]
