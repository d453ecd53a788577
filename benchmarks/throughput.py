"""Training throughput of foxhunt's TFT against pytorch-forecasting's, same architecture, CPU.

    .venv-bench/bin/python benchmarks/throughput.py [--quick] [--contention] [--threads N]
        [--shapes reference,tft-225] [--steps N] [--repeats R] [--json] [--save PATH]

One training step is: zero grads, forward, quantile loss, backward, ``torch.optim.Adam`` step.
Both models see the same synthetic batches (same values, mapped to each library's tensors).
Timed rows, in one interleaved run (every round times a same-run fp32 sgemm, then each row in
turn): both libraries at the reference shape, and at each ``--shapes`` shape (default the
seed's TFT-225, hidden 256) both libraries with foxhunt plain and checkpointed. Per row: the
rounds' min / median / max step time and their spread, matmul GFLOP per step (FlopCounterMode)
and the achieved GFLOP/s beside the sgemm's, bytes autograd saves for backward; the speed
ratios are medians of per-round ratios. ``--contention`` runs one competing 2-thread matmul
process throughout (a busy machine) and adds foxhunt at 1 thread. For the reference shape
also: foxhunt's data-loader windows/s, inference latency (batch 1) and throughput (large
batch), and a short accuracy check (both trained for the same steps on the same batches of a
learnable target). pytorch-forecasting is optional: without it foxhunt's numbers are still
reported (install it with ``pip install -e .[bench]``). ``--quick``: 2 short rounds, no
extras (a minute or two quiet).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

# Run as a script or loaded by path (the tests): either way the sibling modules import by name.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from _bench_config import SHAPES, BenchConfig, ModelShape  # noqa: E402
from _bench_entries import build_entries, entry_results  # noqa: E402
from _bench_measure import (  # noqa: E402
    InferenceResult,
    measure_accuracy,
    measure_inference,
    measure_loader,
    profile_step,
)
from _bench_models import (  # noqa: E402
    Runner,
    Timing,
    load_pf,
    parameter_count,
)
from _bench_quiet import busy_cores_now, wait_until_quiet  # noqa: E402
from _bench_report import LibraryResult, Report, format_report, machine_info  # noqa: E402
from _bench_rounds import (  # noqa: E402
    Competitor,
    run_rounds,
    step_gflop,
)

__all__ = [
    "BenchConfig",
    "ModelShape",
    "Report",
    "format_report",
    "load_pf",
    "main",
    "run_benchmark",
]

PF_INSTALL_HINT = (
    "pytorch-forecasting is not importable: only foxhunt's numbers are reported. "
    "Install the comparison with `pip install -e .[bench]`."
)


def _library_result(
    runner: Runner,
    timings: list[Timing],
    saved: int,
    inference: InferenceResult,
    shape: ModelShape,
) -> LibraryResult:
    medians = [t.median_s for t in timings]
    median_step = statistics.median(medians)
    return LibraryResult(
        parameters=parameter_count(runner.model),
        step_s=medians,
        median_step_s=median_step,
        samples_per_s=shape.batch_size / median_step,
        busy_cores=[t.busy_cores for t in timings],
        system_share=[t.system_s / max(t.user_s + t.system_s, 1e-9) for t in timings],
        other_cores=[t.other_cores for t in timings],
        saved_for_backward_bytes=saved,
        inference=inference,
    )


def run_benchmark(config: BenchConfig, log: Callable[[str], None] | None = None) -> Report:
    """Every measurement of the module docstring, in one run."""
    say = log or (lambda message: None)
    torch.set_num_threads(config.threads)
    shape = config.shape
    machine = machine_info(config.threads)
    pf = load_pf() if config.include_pf else None
    pf_missing = None if pf is not None or not config.include_pf else PF_INSTALL_HINT
    if pf_missing:
        say(pf_missing)

    entries, runners = build_entries(config, pf, say)
    for entry in entries:
        entry.flops = step_gflop(entry.trainer)
    background: list[float | None] = []

    def before_round() -> None:
        background.append(
            wait_until_quiet(config.quiet_wait_s, config.quiet_cores)
            if config.quiet_wait_s > 0
            else busy_cores_now(0.5)
        )

    with Competitor() if config.contention else contextlib.nullcontext():
        rounds = run_rounds(
            entries,
            rounds=config.repeats,
            warmup=config.warmup,
            threads=config.threads,
            sgemm_size=config.sgemm_size,
            retries=0 if config.contention else config.retries,
            quiet_cores=config.quiet_cores,
            before_round=before_round,
            say=say,
        )
    timings = {
        name: rounds.timings[name]
        for name in ("pytorch-forecasting", "foxhunt")
        if name in rounds.timings
    }
    discarded = rounds.discarded
    rows = entry_results(entries, rounds, runners)
    trainers = [e.trainer for e in entries if e.label in timings]

    results: dict[str, LibraryResult] = {}
    for runner in (runners[name] for name in timings):
        if config.quiet_wait_s > 0:
            wait_until_quiet(config.quiet_wait_s, config.quiet_cores)
        saved = next(e.saved_for_backward_bytes or 0 for e in rows if e.label == runner.name)
        big = runner.name == "foxhunt" or config.pf_inference_batch
        inference = measure_inference(runner, shape, config, large=big)
        say(f"{runner.name}: saved for backward {saved / 2**20:.1f} MiB, {inference}")
        results[runner.name] = _library_result(
            runner, timings[runner.name], saved, inference, shape
        )

    fox = results["foxhunt"]
    pf_result = results.get("pytorch-forecasting")
    ratios = []
    if pf_result is not None:
        ratios = [p / f for p, f in zip(pf_result.step_s, fox.step_s, strict=True)]

    loader = None
    if config.loader_days > 0:
        loader = measure_loader(shape, config.loader_days, shape.batch_size)
        say(f"loader: {loader}")
    loader_ratio = None
    if loader is not None and loader.windows_per_s is not None:
        loader_ratio = loader.windows_per_s / fox.samples_per_s

    accuracy = None
    if config.accuracy_steps > 0:
        if config.quiet_wait_s > 0:
            wait_until_quiet(config.quiet_wait_s, config.quiet_cores)
        accuracy = measure_accuracy(config, pf)
        say(f"accuracy: {accuracy}")

    profile_table = profile_step(trainers[-1]) if config.profile else None
    machine["loadavg_end"] = list(os.getloadavg())
    machine["background_busy_cores"] = background
    machine["repeats_discarded"] = discarded
    return Report(
        config=asdict(config),
        machine=machine,
        foxhunt=fox,
        pf=pf_result,
        pf_missing=pf_missing,
        ratios=ratios,
        median_ratio=statistics.median(ratios) if ratios else None,
        loader=loader,
        loader_to_train_ratio=loader_ratio,
        accuracy=accuracy,
        profile=profile_table,
        entries=rows,
        sgemm_gflops=rounds.sgemm_gflops,
    )


#: what --quick changes: the same rows, fewer and shorter rounds, no extras
QUICK: dict[str, Any] = {
    "repeats": 2, "steps": 2, "warmup": 1, "large_steps": 1, "accuracy_steps": 0,
    "loader_days": 0, "latency_reps": 5, "inference_batch": 256, "inference_reps": 1,
}  # fmt: skip


def _parse(argv: Sequence[str] | None) -> tuple[BenchConfig, bool, Path | None]:
    defaults = BenchConfig()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=defaults.steps, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, default=defaults.warmup, help="untimed steps first")
    parser.add_argument("--repeats", type=int, default=defaults.repeats, help="interleaved repeats")
    parser.add_argument("--threads", type=int, default=defaults.threads, help="torch threads")
    parser.add_argument("--no-pf", action="store_true", help="skip pytorch-forecasting")
    parser.add_argument(
        "--pf-large-batch",
        action="store_true",
        help=f"also time pytorch-forecasting's batch-{defaults.inference_batch} inference (minutes)",
    )
    parser.add_argument(
        "--accuracy-steps", type=int, default=defaults.accuracy_steps, help="0 skips the check"
    )
    parser.add_argument(
        "--loader-days", type=int, default=defaults.loader_days, help="0 skips the loader"
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=defaults.quiet_wait_s,
        metavar="SECONDS",
        help="before each repeat wait up to SECONDS for other processes to go idle",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=defaults.retries,
        help="repeats that may be redone when another process took the cores",
    )
    parser.add_argument("--profile", action="store_true", help="profile foxhunt's step")
    parser.add_argument(
        "--shapes",
        default=",".join(name for name, _ in defaults.shapes),
        help=f"more shapes timed in the same rounds, comma-separated ({', '.join(SHAPES)}; "
        "'' for none)",
    )
    parser.add_argument(
        "--large-steps", type=int, default=defaults.large_steps, help="timed steps per round there"
    )
    parser.add_argument(
        "--contention",
        action="store_true",
        help="a busy machine: one competing 2-thread process runs during the timing",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 rounds of few steps, no accuracy check or loader: a minute or two",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--save", type=Path, metavar="PATH", help="also write the JSON report")
    args = parser.parse_args(argv)
    names = [n for n in args.shapes.split(",") if n]
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        parser.error(f"--shapes: unknown {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    config = BenchConfig(
        steps=args.steps,
        warmup=args.warmup,
        repeats=args.repeats,
        threads=args.threads,
        include_pf=not args.no_pf,
        pf_inference_batch=args.pf_large_batch,
        accuracy_steps=args.accuracy_steps,
        loader_days=args.loader_days,
        quiet_wait_s=args.quiet_wait,
        retries=args.retries,
        profile=args.profile,
        shapes=tuple((n, SHAPES[n]) for n in names),
        large_steps=args.large_steps,
        contention=args.contention,
    )
    if args.quick:
        config = replace(config, **QUICK)
    return config, args.json, args.save


def main(argv: Sequence[str] | None = None) -> int:
    config, as_json, save = _parse(argv)
    log = None if as_json else (lambda message: print(message, file=sys.stderr, flush=True))
    report = run_benchmark(config, log=log)
    data = json.dumps(report.to_dict(), indent=2)
    if save is not None:
        save.write_text(data + "\n")
    print(data if as_json else format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
