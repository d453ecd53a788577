"""One prepared check for a session that is lent a CUDA GPU for a few minutes.

    python benchmarks/gpu_check.py --out gpu_out --parquet-file BARS   # on the GPU, < 8 min
    python benchmarks/gpu_check.py --dry-run --out /tmp/gc  # the same code on CPU, tiny sizes

(`bash benchmarks/gpu_prepare.sh` prints the whole device call: docs/performance.md.)
Sections, each timed and capped (SECTION_CAPS), each failure caught and recorded without
losing the others:

1. ``pytest -m gpu tests`` in a subprocess: pass / fail / skip counts;
2. ``bench-memory --preset tft-225`` plain vs checkpointed (selective, full) under
   ``--memory-limit-gb 4``: out of memory or peak bytes, and step time, per mode; on the
   first batch of real windows of ``--parquet-file`` (the tft-225 feature set), else on a
   random batch of the preset's shape, said so;
3. fp32 vs bf16 autocast: a few hundred training steps each (real windows with
   ``--parquet-file``): median step time each and loss agreement;
4. throughput: foxhunt's training samples/s at NVIDIA DeepLearningExamples' TFT electricity
   config beside NVIDIA's A100 figures, and foxhunt vs pytorch-forecasting at the reference
   shape on the same card (_gpu_throughput.py);
5. the fused variable selection op against the plain per-variable reference;
6. the memory profiler's snapshots and its leak warning on a planted leak, and its numbers
   against torch.cuda.max_memory_allocated and NVML's used memory.

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
from _gpu_report import to_markdown
from _gpu_sections import amp_bf16, fused_vsn, profiler
from _gpu_sizes import Sizes
from _gpu_throughput import throughput

# seconds each section may take at most (the budget may cut it shorter): 480 s together, the
# default --budget-s, so that one device call (pip install and start-up beside) ends well
# inside its 10 minutes
SECTION_CAPS = {
    "pytest_gpu": 110,
    "memory_limit": 150,
    "amp_bf16": 80,
    "throughput": 80,
    "fused_vsn": 30,
    "profiler": 30,
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
    """The checkout's commit; on the GPU machine, where the copy of the tree may come without
    its .git, the one gpu_prepare.sh wrote into .gpu/commit."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
        commit = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        commit = ""
    stamp = ROOT / ".gpu" / "commit"
    if not commit and stamp.is_file():
        commit = stamp.read_text().strip() + " (gpu_prepare.sh's stamp)"
    return commit or None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the JSON and table")
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes (CI)")
    parser.add_argument("--budget-s", type=float, default=480.0, help="total time bound")
    parser.add_argument("--memory-limit-gb", type=float, default=4.0)
    parser.add_argument(
        "--parquet-file",
        type=Path,
        help="bars whose windows the memory and bf16 sections train on (default: random "
        "batches of the tft-225 shape, said so in the report)",
    )
    parser.add_argument(
        "--sections",
        default=",".join(SECTION_CAPS),
        help="comma-separated subset to run (a rerun of what failed)",
    )
    args = parser.parse_args(argv)
    chosen = [n for n in args.sections.split(",") if n]
    unknown = sorted(set(chosen) - set(SECTION_CAPS))
    if unknown:
        parser.error(
            f"--sections: unknown {', '.join(unknown)}; choose from {', '.join(SECTION_CAPS)}"
        )
    if args.parquet_file is not None and not args.parquet_file.is_file():
        parser.error(f"--parquet-file {args.parquet_file}: no such file")

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
        "parquet_file": None if args.parquet_file is None else str(args.parquet_file),
        "command": " ".join(sys.argv),
        "sizes": dataclasses.asdict(sizes),
        "sections": {},
    }
    parquet = args.parquet_file
    sections: dict[str, Callable[[float], dict[str, Any]]] = {
        "pytest_gpu": lambda s: pytest_gpu(s, sizes.gpu_tests),
        "memory_limit": lambda s: memory_limit(sizes, device, args.memory_limit_gb, s, parquet),
        "amp_bf16": lambda s: amp_bf16(sizes, device, parquet, s),
        "throughput": lambda s: throughput(sizes, device, s),
        "fused_vsn": lambda s: fused_vsn(sizes, device),
        "profiler": lambda s: profiler(sizes, device),
    }
    start = time.monotonic()
    for name in chosen:
        fn = sections[name]
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
