"""One prepared check for a session that is lent a CUDA GPU for a few minutes.

    python benchmarks/gpu_check.py --out gpu_out            # on the GPU, under 8 minutes
    python benchmarks/gpu_check.py --dry-run --out /tmp/gc  # the same code on CPU, tiny sizes

Sections, each timed, each failure caught and recorded without losing the others:

1. ``pytest -m gpu`` in a subprocess: pass / fail / skip counts;
2. ``bench-memory --preset tft-225`` plain vs checkpointed (selective, full) under
   ``--memory-limit-gb 4``: out of memory or peak bytes, and step time, per mode;
3. fp32 vs bf16 autocast training steps: median step time each and loss agreement;
4. the fused variable selection op against the plain per-variable reference;
5. the memory profiler's snapshots and its leak warning on a planted leak.

``--out DIR`` gets ``gpu_check.json`` and ``gpu_check.md`` (tables to paste into the docs),
both rewritten after every section so that a run cut short keeps what it measured. Exit
status 1 when a section failed or raised. ``--dry-run`` runs on CPU, where the 4 GB cap
cannot be set: the measured peak is compared with it instead ("emulated"), and ``-m gpu``
skips everything.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from _gpu_children import ROOT, memory_limit, pytest_gpu
from _gpu_sections import amp_bf16, fused_vsn, profiler
from _gpu_sizes import Sizes

# seconds each section may take at most (the budget may cut it shorter); 2 + 3 + 1 + 1 + 1 min
SECTION_CAPS = {
    "pytest_gpu": 120,
    "memory_limit": 180,
    "amp_bf16": 60,
    "fused_vsn": 60,
    "profiler": 60,
}


class SectionTimeout(Exception):
    pass


def _run_section(
    name: str, fn: Callable[[float], dict[str, Any]], limit_s: float
) -> dict[str, Any]:
    """``fn(limit_s)`` timed; an exception or overrun becomes status "error" with its cause."""
    print(f"[gpu_check] {name}: start (limit {limit_s:.0f} s)", flush=True)
    start = time.perf_counter()

    def on_alarm(signum: int, frame: object) -> None:
        raise SectionTimeout(f"{name} took longer than {limit_s:.0f} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit_s + 5)  # subprocesses have their own timeout
    try:
        result = fn(limit_s)
    except Exception as err:
        detail = getattr(err, "stderr", None) or traceback.format_exc()
        result = {
            "status": "error",
            "error": f"{type(err).__name__}: {err}"[:500],
            "detail": str(detail)[-3000:],
            "summary": f"{type(err).__name__}: {err}"[:200],
        }
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    result["seconds"] = round(time.perf_counter() - start, 2)
    print(
        f"[gpu_check] {name}: {result['status']} in {result['seconds']} s: {result['summary']}",
        flush=True,
    )
    return result


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def to_markdown(report: dict[str, Any]) -> str:
    """A summary table of the sections and a table of the memory modes."""
    lines = [
        f"GPU check on {report['device_name']} ({report['device']}), torch {report['torch']}, "
        f"foxhunt {report['commit']}, {report['started_utc']}"
        + (" (dry run: CPU, tiny sizes)" if report["dry_run"] else ""),
        "",
        "| section | status | seconds | result |",
        "| --- | --- | ---: | --- |",
    ]
    for name, s in report["sections"].items():
        summary = str(s.get("summary", "")).replace("|", "/")
        lines.append(f"| {name} | {s['status']} | {s.get('seconds', 0):.1f} | {summary} |")
    modes = report["sections"].get("memory_limit", {}).get("modes", [])
    if modes:
        lines += [
            "",
            "| batch | mode | under the limit | peak MiB | step ms | time / plain |",
            "| ---: | --- | --- | ---: | ---: | ---: |",
        ]
        for r in modes:
            peak = "OOM" if r["oom"] else f"{r['peak_bytes'] / (1 << 20):.1f}"
            step = "" if r["step_ms"] is None else f"{r['step_ms']:.1f}"
            ratio = "" if r["time_ratio"] is None else f"{r['time_ratio']:.2f}"
            fits = "yes" if r["fits"] else "no"
            lines.append(
                f"| {r['batch_size']} | {r['mode']} | {fits} | {peak} | {step} | {ratio} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON and table")
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes (CI)")
    parser.add_argument("--budget-s", type=float, default=420.0, help="total time bound")
    parser.add_argument("--memory-limit-gb", type=float, default=4.0)
    args = parser.parse_args(argv)

    if args.dry_run:  # the CPU kernel never runs on CUDA: the ATen path is what the GPU runs
        os.environ["FOXHUNT_FUSED_KERNEL"] = "0"
        torch.set_num_threads(1)  # as the test suite: tiny models, a shared 2-core machine
        device, sizes = torch.device("cpu"), Sizes.tiny()
    elif torch.cuda.is_available():
        device, sizes = torch.device("cuda", 0), Sizes.real()
    else:
        print("gpu_check: no CUDA device; use --dry-run to run it on CPU", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "dry_run": args.dry_run,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "commit": _git_commit(),
        "started_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "budget_s": args.budget_s,
        "sizes": dataclasses.asdict(sizes),
        "sections": {},
    }
    sections: dict[str, Callable[[float], dict[str, Any]]] = {
        "pytest_gpu": pytest_gpu,
        "memory_limit": lambda s: memory_limit(sizes, device, args.memory_limit_gb, s),
        "amp_bf16": lambda s: amp_bf16(sizes, device),
        "fused_vsn": lambda s: fused_vsn(sizes, device),
        "profiler": lambda s: profiler(sizes, device),
    }
    start = time.monotonic()
    for name, fn in sections.items():
        left = args.budget_s - (time.monotonic() - start)
        if left < 10:
            result = {"status": "skipped", "summary": "time budget spent", "seconds": 0.0}
        else:
            result = _run_section(name, fn, min(SECTION_CAPS[name], left))
        report["sections"][name] = result
        report["total_s"] = round(time.monotonic() - start, 1)
        (args.out / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n")
        (args.out / "gpu_check.md").write_text(to_markdown(report))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(f"[gpu_check] done in {report['total_s']} s: {args.out / 'gpu_check.json'}", flush=True)
    bad = [n for n, s in report["sections"].items() if s["status"] in ("error", "failed")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
