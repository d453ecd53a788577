"""The memory profiler's snapshot checked against what else reads the device's memory: on
CUDA the caching allocator's own counters (torch.cuda.max_memory_allocated, memory_reserved)
and NVML's used memory (nvidia-ml-py), on CPU the OS high-water mark of the RSS."""

from __future__ import annotations

import os
import resource
from typing import Any

import torch

from foxhunt.memory.profiler import MemorySnapshot

MiB = 1 << 20
#: NVML's used memory exceeds what the allocator reserved by the CUDA context, cuBLAS/cuDNN
#: handles and other processes' memory: about 0.5-1 GiB with one process; more is a finding
CONTEXT_ALLOWANCE_MB = 3072.0


def nvml_memory(index: int) -> dict[str, Any]:
    """NVML's view of device ``index``: used and total MiB, and this process's use where the
    driver tells it (in a container the process list may not hold our pid)."""
    try:
        import pynvml
    except ImportError:
        return {"error": "nvidia-ml-py (pynvml) is not installed"}
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        info = pynvml.nvmlDeviceGetMemoryInfo(handle)
    except pynvml.NVMLError as err:
        return {"error": f"NVMLError: {err}"}
    result: dict[str, Any] = {
        "device_used_mb": info.used / MiB,
        "device_total_mb": info.total / MiB,
        "process_used_mb": None,
        "processes": None,
    }
    try:  # a VM's driver may not list processes: the device's numbers still stand
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except pynvml.NVMLError as err:
        return {**result, "process_error": f"NVMLError: {err}"}
    own = [p.usedGpuMemory for p in procs if p.pid == os.getpid() and p.usedGpuMemory]
    return {**result, "process_used_mb": own[0] / MiB if own else None, "processes": len(procs)}


def cross_check(snap: MemorySnapshot, device: torch.device) -> dict[str, Any]:
    """``snap`` (taken just before) against the other readings; ``ok`` False names each
    disagreement in ``problems``."""
    problems: list[str] = []
    if device.type != "cuda":
        maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        if snap.peak_mb > maxrss_mb + 1:
            problems.append(f"profiler peak {snap.peak_mb:.0f} MiB > OS max RSS {maxrss_mb:.0f}")
        return {
            "ok": not problems,
            "problems": problems,
            "profiler_peak_mb": snap.peak_mb,
            "os_max_rss_mb": maxrss_mb,
            "nvml": None,
            "summary": f"peak {snap.peak_mb:.0f} MiB <= OS max RSS {maxrss_mb:.0f} MiB; "
            "NVML: not on CPU",
        }
    torch.cuda.synchronize(device)
    max_alloc = torch.cuda.max_memory_allocated(device) / MiB
    reserved = torch.cuda.memory_reserved(device) / MiB
    nvml = nvml_memory(device.index or 0)
    if abs(snap.peak_mb - max_alloc) > 1:
        problems.append(f"profiler peak {snap.peak_mb:.0f} != max_memory_allocated {max_alloc:.0f}")
    if snap.reserved_mb is not None and snap.peak_mb > snap.reserved_mb + 1:
        problems.append(f"peak {snap.peak_mb:.0f} > reserved {snap.reserved_mb:.0f}")
    used = nvml.get("device_used_mb")
    if used is None:
        problems.append(f"NVML unreadable: {nvml.get('error')}")
    else:
        if used + 1 < reserved:
            problems.append(f"NVML used {used:.0f} < allocator reserved {reserved:.0f}")
        if used - reserved > CONTEXT_ALLOWANCE_MB:
            problems.append(
                f"NVML used {used:.0f} exceeds reserved {reserved:.0f} by more than "
                f"{CONTEXT_ALLOWANCE_MB:.0f} MiB"
            )
        if abs(nvml["device_total_mb"] - snap.total_mb) > 1:
            problems.append(f"total {snap.total_mb:.0f} != NVML {nvml['device_total_mb']:.0f}")
    own = nvml.get("process_used_mb")
    if own is not None and own + 1 < reserved:
        problems.append(f"NVML process used {own:.0f} < reserved {reserved:.0f}")
    nvml_text = "NVML unreadable" if used is None else f"NVML used {used:.0f} MiB"
    return {
        "ok": not problems,
        "problems": problems,
        "profiler_peak_mb": snap.peak_mb,
        "profiler_reserved_mb": snap.reserved_mb,
        "profiler_total_mb": snap.total_mb,
        "max_memory_allocated_mb": max_alloc,
        "memory_reserved_mb": reserved,
        "nvml": nvml,
        "summary": f"peak {snap.peak_mb:.0f} MiB vs max_memory_allocated {max_alloc:.0f}; "
        f"reserved {reserved:.0f} MiB, {nvml_text}",
    }
