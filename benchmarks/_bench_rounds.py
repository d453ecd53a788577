"""Interleaved rounds of timed training steps over several entries (a library at a shape,
a variant, a thread count), with the machine's matmul speed measured in the same rounds, an
optional competing process, and how steady each entry was."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from _bench_config import ModelShape
from _bench_models import Timing, Trainer

#: the competing process: a 2-thread fp32 matmul loop, as another user's training would be
#: (its thread count from OMP_NUM_THREADS, which `Competitor` sets)
COMPETITOR = """
import os
import torch
torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
a = torch.randn(768, 768)
while True:
    a = torch.tanh(a @ a * 1e-3)
"""


@dataclass
class Entry:
    """One timed row: `trainer` stepped `steps` times per round at `threads` threads."""

    label: str
    shape_name: str
    shape: ModelShape
    trainer: Trainer
    steps: int
    threads: int
    warmup: int | None = None
    """Untimed steps before each round's timing; None: the run's warm-up before the first
    round, 1 before each later one."""
    flops: float = 0.0
    """Matmul FLOP of one training step (torch's FlopCounterMode: forward and backward)."""


@dataclass(frozen=True, kw_only=True)
class EntryResult:
    label: str
    shape: str
    library: str
    threads: int
    round_s: list[float]
    """Median step seconds of each round."""
    median_s: float
    """Median of `round_s`."""
    spread: float
    """(max - min) / median of `round_s`: how steady the rounds were."""
    gflop_per_step: float
    gflops: float
    """Achieved matmul GFLOP/s: gflop_per_step / median_s."""
    saved_for_backward_bytes: int | None = None

    @classmethod
    def of(cls, entry: Entry, round_s: list[float], saved: int | None) -> EntryResult:
        median = statistics.median(round_s) if round_s else float("nan")
        spread = (max(round_s) - min(round_s)) / median if round_s else float("nan")
        return cls(
            label=entry.label,
            shape=entry.shape_name,
            library=entry.trainer.runner.name,
            threads=entry.threads,
            round_s=round_s,
            median_s=median,
            spread=spread,
            gflop_per_step=entry.flops,
            gflops=entry.flops / median,
            saved_for_backward_bytes=saved,
        )


def step_gflop(trainer: Trainer) -> float:
    """Matmul GFLOP of one training step (one untimed step, counted), foxhunt's C++ kernel
    on: its ops (foxhunt::grn_cells and its backward) carry FLOP formulas, the matmuls of
    the Python math they compute (the recompute in backward included)."""
    with FlopCounterMode(display=False) as counter:
        trainer.step()
    return float(counter.get_total_flops()) / 1e9


def sgemm_gflops(size: int, reps: int = 5) -> float:
    """GFLOP/s of a square fp32 matmul at the current thread count: the median of `reps`."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2 * size**3 / statistics.median(times) / 1e9


class Competitor:
    """Context manager: one competing matmul process (2 threads unless told) for the block's
    duration."""

    def __init__(self, threads: int = 2) -> None:
        self.threads = threads

    def __enter__(self) -> Competitor:
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        self.process = subprocess.Popen([sys.executable, "-c", COMPETITOR], env=env)
        time.sleep(1.0)  # past its import: competing when the first step starts
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass(frozen=True, kw_only=True)
class Rounds:
    timings: dict[str, list[Timing]]
    sgemm_gflops: list[float]
    """Same-run sgemm GFLOP/s, one per round (at the configured thread count)."""
    discarded: int


def run_rounds(
    entries: Sequence[Entry],
    *,
    rounds: int,
    warmup: int,
    threads: int,
    sgemm_size: int,
    retries: int = 0,
    quiet_cores: float | None = None,
    before_round: Callable[[], object] = lambda: None,
    say: Callable[[str], None] = lambda message: None,
) -> Rounds:
    """`rounds` rounds; each times sgemm, then every entry in turn. A round in which another
    process kept more than `quiet_cores` cores busy is measured again, up to `retries` times."""
    timings: dict[str, list[Timing]] = {e.label: [] for e in entries}
    sgemm: list[float] = []
    discarded = 0
    while len(sgemm) < rounds:
        first = not sgemm and not discarded
        before_round()
        torch.set_num_threads(threads)
        gflops = sgemm_gflops(sgemm_size)
        may_retry = discarded < retries
        limit = quiet_cores if may_retry else None
        done: dict[str, Timing] = {}
        for entry in entries:
            torch.set_num_threads(entry.threads)
            untimed = (warmup if first else 1) if entry.warmup is None else entry.warmup
            timing = entry.trainer.timed_steps(untimed, entry.steps, limit)
            done[entry.label] = timing
            say(
                f"round {len(sgemm) + 1}/{rounds} {entry.label}: median {timing.median_s:.3f} "
                f"s/step (min {min(timing.seconds):.3f}, max {max(timing.seconds):.3f})"
            )
            if not timing.complete:
                break
        torch.set_num_threads(threads)
        if (len(done) < len(entries) or not all(t.complete for t in done.values())) and may_retry:
            discarded += 1
            say("round disturbed by other processes: measuring it again")
            continue
        sgemm.append(gflops)
        for label, timing in done.items():
            timings[label].append(timing)
    return Rounds(timings=timings, sgemm_gflops=sgemm, discarded=discarded)


def format_entries(entries: Sequence[EntryResult], sgemm: Sequence[float], busy: bool) -> list[str]:
    """The rounds as a Markdown table, then pytorch-forecasting's step over each foxhunt
    row's of the same shape (median of the per-round ratios, and their range)."""
    if not entries:
        return []
    machine = "busy: one competing 2-thread process" if busy else "no competing process started"
    lines = [
        "",
        f"interleaved rounds ({machine}); same-run sgemm: "
        + (
            f"{min(sgemm):.0f} / {statistics.median(sgemm):.0f} / {max(sgemm):.0f} GFLOP/s "
            "(min / median / max)"
            if sgemm
            else "n/a"
        ),
        "",
        "| row | threads | step s: median (min - max) | spread | GFLOP/step | GFLOP/s | "
        "of sgemm | saved MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    top = statistics.median(sgemm) if sgemm else float("nan")
    for e in entries:
        saved = (
            "n/a"
            if e.saved_for_backward_bytes is None
            else f"{e.saved_for_backward_bytes / 2**20:.0f}"
        )
        lines.append(
            f"| {e.label} | {e.threads} | {e.median_s:.3f} ({min(e.round_s):.3f} - "
            f"{max(e.round_s):.3f}) | {100 * e.spread:.0f}% | {e.gflop_per_step:.1f} | "
            f"{e.gflops:.1f} | {100 * e.gflops / top:.0f}% | {saved} |"
        )
    for shape in dict.fromkeys(e.shape for e in entries):
        pf = next((e for e in entries if e.shape == shape and e.library != "foxhunt"), None)
        if pf is None:
            continue
        for fox in (e for e in entries if e.shape == shape and e.library == "foxhunt"):
            ratios = [p / f for p, f in zip(pf.round_s, fox.round_s, strict=True)]
            lines.append(
                f"{fox.label} vs pytorch-forecasting: {statistics.median(ratios):.2f}x "
                f"(rounds {min(ratios):.2f} - {max(ratios):.2f})"
            )
    return lines
