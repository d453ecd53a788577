"""CPU inference latency of every way foxhunt can serve a model, measured in one run.

    .venv/bin/python benchmarks/inference.py [--fp32-run DIR --qat-run DIR]
        [--data ../shared/data/ES_FUT_60d_5min.parquet] [--threads 1 2] [--repeats 9] [--quick]

Times one window and a batch of 1024 windows (train windows of the runs' own bars) through

- PyTorch eager FP32 (the FP32 run as ``foxhunt predict`` loads it);
- foxhunt int8: the QAT run's ``export --int8``, loaded with foxhunt's int8 kernel
  (``quant/kernel.py``; ``FOXHUNT_CPU_ISA=avx2`` builds its AVX2 path);
- ONNX Runtime FP32 (``export --onnx`` of the FP32 run);
- ONNX Runtime int8, QDQ (``export --onnx --int8``): from the QAT run's scales, and
  calibrated on the FP32 run's training windows;

each median of interleaved passes after a warm-up, for each ``--threads`` count (ONNX
Runtime sessions are made with that many intra-op threads; its inputs are prepared numpy
arrays, as a consumer in another language feeds them). Without ``--fp32-run/--qat-run`` it
trains both first (the default model on ``--data``, a few steps: latency does not depend on
how well a model is trained); ``--quick`` trains tiny runs on synthetic bars (smoke test).
Prints one markdown table per thread count; "int8 kernel / it" above 0.87 means within 15%
of foxhunt's kernel (issue 21's rule). The PT2E / ``torch.compile`` int8 route and torchao
are not timed: torchao is not installed, and torch.ao's PT2E flow is its deprecated half.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from foxhunt.cli import main as cli_main
from foxhunt.data import generate_bars, prepare_data
from foxhunt.exports.int8 import export_run, load_export
from foxhunt.exports.onnx import export_onnx
from foxhunt.exports.onnx_int8 import export_onnx_int8
from foxhunt.exports.onnx_runtime import load_onnx
from foxhunt.quant.kernel import available as int8_kernel
from foxhunt.runs import ONNX_MODEL_FILE, read_run_config
from foxhunt.serving import load_run

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ES_FUT_60d_5min.parquet"
SIZES = {"1 window": 1, "batch 1024": 1024}
ROWS = (
    "PyTorch eager FP32",
    "foxhunt int8 kernel (QAT)",
    "ONNX Runtime FP32",
    "ONNX Runtime int8 QDQ (QAT scales)",
    "ONNX Runtime int8 QDQ (calibrated)",
)
TINY = ["--lookback", "16", "--horizon", "4", "--hidden-size", "8", "--attention-heads", "2",
        "--variable-hidden-size", "4", "--epochs", "1", "--max-steps-per-epoch", "3"]  # fmt: skip
SHORT = ["--max-gap", "10min", "--epochs", "1", "--max-steps-per-epoch", "30"]


def train_runs(args: argparse.Namespace, out: Path) -> tuple[Path, Path]:
    """Train an FP32 and a QAT run (same seed and flags) with ``foxhunt train``, in this
    process (a fresh interpreter per run only added its start-up)."""
    data = args.data
    if args.quick:
        data = out / "bars.parquet"
        generate_bars(days=8, seed=1).to_parquet(data)
    flags = ["--parquet-file", str(data), *(TINY if args.quick else SHORT), "--seed", "0"]
    flags.append("--no-report")
    runs = out / "fp32", out / "qat"
    for folder, extra in zip(runs, ([], ["--qat", "--qat-freeze-after", "10"]), strict=True):
        with contextlib.redirect_stdout(io.StringIO()):
            # the default log level: a lower one would stay set for whatever runs next in
            # this process (tests/benchmarks trains in the pytest process)
            code = cli_main(["train", *flags, *extra, "--output-dir", str(folder)])
        if code != 0:
            raise SystemExit(f"foxhunt train for {folder.name} exited {code}")
    return runs


def exports(fp32: Path, qat: Path, out: Path) -> dict[str, Path]:
    """The runs exported every way into ``out``; exports an earlier call wrote there from
    the same run files (``exports.json`` records which) are reused, not redone."""
    folders = dict(
        zip(ROWS, [fp32, out / "int8", out / "onnx", out / "qdq-qat", out / "qdq-cal"], strict=True)
    )
    marker = out / "exports.json"
    made_from = {
        name: [str(run.resolve()), (run / "model.safetensors").stat().st_mtime_ns]
        for name, run in (("fp32", fp32), ("qat", qat))
    }
    if marker.is_file() and json.loads(marker.read_text()) == made_from:
        return folders
    export_run(qat, folders[ROWS[1]], mode="qat")
    export_onnx(fp32, folders[ROWS[2]])
    export_onnx_int8(qat, folders[ROWS[3]])
    # calibrated from the FP32 graph just exported: what `export --onnx --int8` traces again
    fp32_graph = (folders[ROWS[2]] / ONNX_MODEL_FILE).read_bytes()
    export_onnx_int8(fp32, folders[ROWS[4]], fp32_graph=fp32_graph)
    marker.write_text(json.dumps(made_from))
    return folders


def callables(folders: dict[str, Path], batch: Any) -> dict[str, Callable[[], object]]:
    """One forward pass per row; built after ``torch.set_num_threads`` (ORT reads it)."""
    calls: dict[str, Callable[[], object]] = {}
    for name, folder in folders.items():
        if "ONNX" in name:
            model = load_onnx(folder)
            feeds = {
                n: getattr(batch, n)
                .numpy()
                .astype(np.int64 if n == "static_categorical" else np.float32)
                for n in model.names
            }
            calls[name] = lambda s=model.session, f=feeds: s.run(None, f)
        else:
            torch_model = (load_export(folder) if name == ROWS[1] else load_run(folder)).model
            torch_model.eval()
            calls[name] = lambda m=torch_model: m(batch)
    return calls


def median_ms(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median wall time per call, the calls interleaved so that machine load hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    with torch.inference_mode():
        for call in calls.values():
            call()
            call()  # warm-up: allocator, weight packing, first-call paths
        for _ in range(repeats):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def measure(
    args: argparse.Namespace, folders: dict[str, Path]
) -> dict[int, dict[str, dict[str, float]]]:
    loaded = load_run(folders[ROWS[0]])
    data = prepare_data(read_run_config(folders[ROWS[0]]).data, preprocessor=loaded.preprocessor)
    n = len(data.train)
    batches = {
        size: data.train.__getitems__([i % n for i in range(rows)]) for size, rows in SIZES.items()
    }
    result: dict[int, dict[str, dict[str, float]]] = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        result[threads] = {}
        for size, batch in batches.items():
            repeats = args.repeats * (40 if SIZES[size] == 1 else 1)
            result[threads][size] = median_ms(callables(folders, batch), repeats)
    return result


def table(result: dict[str, dict[str, float]]) -> str:
    lines = [
        "| route | "
        + " | ".join(f"{s} | FP32 eager / it | int8 kernel / it" for s in SIZES)
        + " |",
        "| --- |" + " ---: | ---: | ---: |" * len(SIZES),
    ]
    for name in ROWS:
        cells = []
        for size in SIZES:
            t = result[size]
            cells += [
                f"{t[name]:.2f} ms",
                f"{t[ROWS[0]] / t[name]:.2f}x",
                f"{t[ROWS[1]] / t[name]:.2f}x",
            ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine() -> str:
    import onnxruntime

    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    kernel = int8_kernel()
    isa = {
        k: os.environ[k] for k in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA") if k in os.environ
    }
    return (
        f"{cpu}, {os.cpu_count()} cores; torch {torch.__version__} (ATen CPU capability "
        f"{torch.backends.cpu.get_cpu_capability()}), onnxruntime {onnxruntime.__version__} "
        f"(MLAS picks its kernels from CPUID: no ISA limit applies to it); foxhunt int8 kernel: "
        f"{kernel.simd() if kernel else 'not built'}; limits {isa or 'none'}; load average "
        + ", ".join(f"{x:.1f}" for x in os.getloadavg())
    )


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """--fp32-run, --qat-run, --data and --quick: the runs a benchmark exports."""
    p.add_argument("--fp32-run", type=Path, default=None, help="an FP32 run folder")
    p.add_argument("--qat-run", type=Path, default=None, help="a QAT run of the same shape")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="bars to train on")
    p.add_argument("--quick", action="store_true", help="tiny runs on synthetic bars, few repeats")
    p.add_argument(
        "--exports", type=Path, default=None,
        help="write the exports here and keep them (default: a temporary folder); exports of "
        "the same run files found there are reused",
    )  # fmt: skip


def runs_of(args: argparse.Namespace, out: Path) -> tuple[Path, Path]:
    """The FP32 and QAT runs the arguments name, or both trained into ``out``."""
    if (args.fp32_run is None) != (args.qat_run is None):
        raise SystemExit("pass both --fp32-run and --qat-run, or neither (they are trained)")
    if args.fp32_run is None and not args.quick and not args.data.is_file():
        raise SystemExit(f"{args.data} not found: pass --data, or --fp32-run and --qat-run")
    return (args.fp32_run, args.qat_run) if args.fp32_run else train_runs(args, out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_run_arguments(p)
    p.add_argument("--threads", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    p.add_argument(
        "--repeats", type=int, default=9, help="timed passes of batch 1024 (x40 for one window)"
    )
    args = p.parse_args()
    if args.quick:
        args.repeats, args.threads = 1, args.threads[:1]
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        fp32, qat = runs_of(args, out)
        folders = exports(fp32, qat, args.exports or out)
        result = measure(args, folders)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for threads, by_size in result.items():
        print(f"\n{threads} thread(s):\n")
        print(table(by_size))
    print(f"\n{machine()}; {started}")


if __name__ == "__main__":
    main()
