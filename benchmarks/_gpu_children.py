"""The sections of benchmarks/gpu_check.py that run in a subprocess: the CUDA-gated tests and
`foxhunt bench-memory` under a memory cap. A child's timeout, crash or allocator cap stays in
the child; a failure raises (``CalledProcessError`` carries its stderr) for the runner to record."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from _gpu_data import data_label, input_counts
from _gpu_sizes import Sizes

ROOT = Path(__file__).resolve().parents[1]
GB, MiB = 1 << 30, 1 << 20
# plain, the selective policy docs/memory.md recommends (most of the saving), everything
MODES = {"none": "plain", "past_vsn+lstm_encoder+fusion_decoder": "selective", "full": "full"}


def _child_env() -> dict[str, str]:
    """This checkout's sources first, so children test this tree whatever is installed."""
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=ROOT, env=_child_env(), capture_output=True, text=True, timeout=timeout
    )


def pytest_gpu(limit_s: float, paths: tuple[str, ...] = ("tests",)) -> dict[str, Any]:
    """Every test marked ``gpu`` under ``paths``; on CPU they all skip (or are deselected).
    In one process (``-p no:xdist``): the tests share one GPU and measure its memory."""
    args = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"]
    args += ["-p", "no:xdist", *paths]
    done = _run(args, limit_s)
    text = (done.stdout + done.stderr).strip()
    last = text.splitlines()[-1] if text else ""  # "2 passed, 1 skipped, 410 deselected in 9s"
    found = re.findall(r"(\d+) (passed|failed|skipped|deselected|error)", last)
    counts = {kind: int(n) for n, kind in found}
    result = {k: counts.get(k, 0) for k in ("passed", "failed", "skipped", "deselected", "error")}
    ok = done.returncode == 0 and not result["failed"] and not result["error"]
    return {
        "status": "ok" if ok else "failed",
        "returncode": done.returncode,
        **result,
        "output_tail": "" if ok else text[-3000:],
        "summary": last.strip("= ") or f"pytest exited {done.returncode}",
    }


def _bench(
    sizes: Sizes,
    device: torch.device,
    batch: int,
    limit_gb: float,
    timeout: float,
    parquet: Path | None,
) -> Any:
    """One `foxhunt bench-memory` run; its JSON report. With ``parquet``, on its first batch
    of real windows, the tft-225 preset's feature groups (bench-memory --parquet-file)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        args = [sys.executable, "-m", "foxhunt", "bench-memory", "--preset", "tft-225"]
        args += ["--device", device.type, "--modes", ",".join(MODES), "--batch-size", str(batch)]
        args += ["--steps", str(sizes.bench_steps), "--warmup", "1", "--json", str(out)]
        args += sizes.bench_overrides
        if parquet is not None:
            args += ["--parquet-file", str(parquet.resolve())]
        if device.type == "cuda":  # on CPU bench-memory ignores the cap: emulated by the caller
            args += ["--memory-limit-gb", str(limit_gb)]
        done = _run(args, timeout)
        if done.returncode != 0:
            raise RuntimeError(
                f"{shlex.join(args[1:])} exited {done.returncode}: {done.stderr[-2000:]}"
            )
        return json.loads(out.read_text())


def _data_label(report: dict[str, Any], parquet: Path | None) -> str:
    """Where the measured batch came from, with the input counts the model was built for."""
    c = report["config"]
    counts = input_counts(
        c["num_static"], c["static_cardinalities"], c["num_past"], c["num_future"]
    )
    return data_label(counts, parquet)


def memory_limit(
    sizes: Sizes,
    device: torch.device,
    limit_gb: float,
    limit_s: float,
    parquet: Path | None = None,
) -> dict[str, Any]:
    """`bench-memory --preset tft-225` per batch size, each in a subprocess (the allocator cap
    and any out-of-memory state die with it); a batch that fails does not lose the others."""
    cuda = device.type == "cuda"
    runs: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    data: dict[str, str] = {}
    deadline = time.monotonic() + limit_s
    for batch in sizes.bench_batches:
        try:
            report = _bench(sizes, device, batch, limit_gb, deadline - time.monotonic(), parquet)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError) as err:
            errors[str(batch)] = f"{type(err).__name__}: {err}"[-2500:]
            continue
        data[str(batch)] = _data_label(report, parquet)
        for r in report["results"]:
            peak = r["peak_bytes"]
            fits = not r["oom"] and (cuda or (peak is not None and peak <= limit_gb * GB))
            runs.append(
                {
                    "batch_size": batch,
                    "mode": r["mode"],
                    "label": MODES[r["mode"]],
                    "oom": r["oom"],
                    "fits": fits,
                    "peak_bytes": peak,
                    "saved_bytes": r["saved_bytes"],
                    "step_ms": r["step_ms"],
                    "time_ratio": r["time_ratio"],
                }
            )
    how = (
        "enforced: torch.cuda.set_per_process_memory_fraction (bench-memory --memory-limit-gb); "
        "the CUDA context is outside the cap"
        if cuda
        else "emulated: the CPU peak (live tensor storages) compared with the limit"
    )
    per_batch = [
        f"b{b}: "
        + ", ".join(
            f"{r['label']} "
            + ("OOM" if r["oom"] else f"{r['peak_bytes'] / MiB:.0f} MiB")
            + ("" if r["step_ms"] is None else f" {r['step_ms']:.0f} ms")
            for r in runs
            if r["batch_size"] == b
        )
        for b in sizes.bench_batches
        if str(b) not in errors
    ]
    per_batch += [f"b{b}: error" for b in errors]
    labels = sorted(set(data.values()))
    return {
        "status": "error" if errors else "ok",
        "data": labels[0] if len(labels) == 1 else data,
        "limit_gb": limit_gb,
        "limit": how,
        "modes": runs,
        "errors": errors,
        "summary": f"{limit_gb:g} GB {how.split(':')[0]}; "
        + "; ".join(per_batch)
        + ("; " + labels[0].split(" (")[0] if len(labels) == 1 else ""),
    }
