"""What benchmarks/kernel_routes.py shares between its GRN and int8 sections: the machine,
the optional packages, the routes and their interleaved rounds, the table and the 15% rule."""

from __future__ import annotations

import importlib
import logging
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import torch

#: the rule of docs/export.md ("Decision (issue 21's rule)"): a kernel stays only where it
#: beats the best maintained route by more than this
MARGIN = 1.15
#: route kinds: foxhunt's kernel, a maintained route (the rule compares these two), and a
#: float route shown for scale (the int8 section's FP32 F.linear)
KERNEL, MAINTAINED, FLOAT = "kernel", "maintained", "float"


def cpu_flags() -> set[str]:
    """The first CPU's flags (/proc/cpuinfo), empty where it cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((row for row in text.splitlines() if row.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    line = next((row for row in text.splitlines() if row.startswith("model name")), "")
    return line.partition(":")[2].strip() or "unknown CPU"


def has_vnni(flags: set[str]) -> bool:
    return bool({"avx512_vnni", "avx_vnni"} & flags)


def cpu_kind(flags: set[str]) -> str:
    """The issue's two CPU kinds: with AVX-512 (the Intel Xeon column) or AVX2 only."""
    return "AVX-512" if "avx512f" in flags else "AVX2"


def machine_line(flags: set[str]) -> str:
    marks = {"avx512f": "avx512f" in flags, "vnni": has_vnni(flags), "avx2": "avx2" in flags}
    flag_text = ", ".join(f"{name} {'yes' if on else 'no'}" for name, on in marks.items())
    return (
        f"CPU: {cpu_model()} ({os.cpu_count()} cores; {flag_text}; ATen "
        f"{torch.backends.cpu.get_cpu_capability()}); torch {torch.__version__}"
    )


def load_line(when: str) -> str:
    one, five, fifteen = os.getloadavg()
    return (
        f"load average at {when}: {one:.2f} {five:.2f} {fifteen:.2f} ({time.strftime('%H:%M:%S')})"
    )


def optional(module: str, extra: str, routes: Sequence[str]) -> ModuleType | None:
    """The module, or None after one line saying which routes are skipped and which
    pyproject extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        print(
            f"{module} is not installed ({exc}): skipping {', '.join(routes)}; install it "
            f"with pip install -e '.[{extra}]' (or pip install {module})"
        )
        return None


@contextmanager
def environment(name: str, value: str) -> Iterator[None]:
    """`name`=`value` in os.environ for the block, then as it was."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


@contextmanager
def quiet_loggers(*names: str) -> Iterator[None]:
    """Only errors from these loggers in the block (torchao's import warns of its CUDA
    libraries on a CPU build)."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@dataclass
class Route:
    """One timed callable of a cell (a shape and a mode), and what its setup found."""

    cell: str
    name: str
    kind: str
    call: Callable[[], object]
    compile_s: float | None = None
    """Seconds of the first call (compile or export included); None: an eager route."""
    error: str = ""
    """The route's output (and gradients) against the cell's reference, as printed."""
    grad: bool = True
    """Grad mode of the calls (set once per round, not per call)."""
    reps: int = 1
    rounds: list[float] = field(default_factory=list)
    """Median seconds of a call in each round."""

    @property
    def median(self) -> float:
        return statistics.median(self.rounds) if self.rounds else float("nan")


def calibrate(route: Route, target_s: float, max_reps: int = 20_000) -> None:
    """Calls per round so that a round of this route takes about ``target_s`` (at least one)."""
    with torch.set_grad_enabled(route.grad):
        start = time.perf_counter()
        route.call()
        once = time.perf_counter() - start
    route.reps = max(1, min(max_reps, round(target_s / max(once, 1e-7))))


def interleaved(routes: Sequence[Route], rounds: int, say: Callable[[str], None]) -> None:
    """``rounds`` rounds over every route; odd rounds run them in reverse (ABBA), so a change
    in the machine's load reaches every route alike. Each round records a route's median call."""
    for r in range(rounds):
        order = routes if r % 2 == 0 else list(reversed(routes))
        start = time.perf_counter()
        for route in order:
            times = []
            with torch.set_grad_enabled(route.grad):
                for _ in range(route.reps):
                    t0 = time.perf_counter()
                    route.call()
                    times.append(time.perf_counter() - t0)
            route.rounds.append(statistics.median(times))
        say(f"round {r + 1}/{rounds}: {time.perf_counter() - start:.1f} s")


def ratios(a: Route, b: Route) -> list[float]:
    """a's time over b's, round by round."""
    return [x / y for x, y in zip(a.rounds, b.rounds, strict=True)]


def _time(seconds: float) -> str:
    if seconds != seconds:  # nan
        return "n/a"
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    return f"{seconds * 1e3:.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def table(routes: Sequence[Route], reference: dict[str, str]) -> list[str]:
    """The Markdown table: per route the median call and the rounds' range, the median of
    per-round ratios to the cell's reference kernel route (and their range), compile time."""
    lines = [
        "| cell | route | kind | median | min - max | / kernel (rounds) | first call s | error |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    by_cell: dict[str, dict[str, Route]] = {}
    for route in routes:
        by_cell.setdefault(route.cell, {})[route.name] = route
    for route in routes:
        base = by_cell[route.cell].get(reference.get(route.cell, ""))
        ratio = "n/a"
        if base is not None and route.rounds and base.rounds:
            rs = ratios(route, base)
            ratio = f"{statistics.median(rs):.2f}x ({min(rs):.2f} - {max(rs):.2f})"
        first = "-" if route.compile_s is None else f"{route.compile_s:.1f}"
        spread = (
            f"{_time(min(route.rounds))} - {_time(max(route.rounds))}" if route.rounds else "n/a"
        )
        lines.append(
            f"| {route.cell} | {route.name} | {route.kind} | {_time(route.median)} | {spread} "
            f"| {ratio} | {first} | {route.error} |"
        )
    return lines


def verdict(title: str, routes: Sequence[Route], flags: set[str]) -> list[str]:
    """The 15% rule per cell and over all cells: the fastest kernel route against the
    fastest maintained route (medians; the margin is the median of their per-round ratios)."""
    lines = [f"{title}: the 15% rule on this CPU ({cpu_kind(flags)})"]
    wins: list[str] = []
    losses: list[str] = []
    for cell in dict.fromkeys(r.cell for r in routes):
        timed = [r for r in routes if r.cell == cell and r.rounds]
        kernel = min((r for r in timed if r.kind == KERNEL), key=lambda r: r.median, default=None)
        best = min((r for r in timed if r.kind == MAINTAINED), key=lambda r: r.median, default=None)
        if kernel is None or best is None:
            lines.append(f"- {cell}: n/a (no kernel route or no maintained route was timed)")
            continue
        rs = ratios(best, kernel)
        margin = statistics.median(rs)
        beats = margin > MARGIN
        (wins if beats else losses).append(cell)
        floats = "".join(
            f"; {r.name} {_time(r.median)}, {statistics.median(ratios(r, kernel)):.2f}x the kernel's"
            for r in timed
            if r.kind == FLOAT
        )
        lines.append(
            f"- {cell}: {kernel.name} {_time(kernel.median)} vs best maintained {best.name} "
            f"{_time(best.median)}: maintained / kernel {margin:.2f}x (rounds {min(rs):.2f} - "
            f"{max(rs):.2f}): "
            + (
                "kernel beats it by more than 15%"
                if beats
                else "within 15% or faster: the kernel does not pay here"
            )
            + floats
        )
    if wins and not losses:
        overall = "KEEP on this CPU: the kernel beats the best maintained route by more than 15% in every cell"
    elif losses and not wins:
        overall = "DELETE on this CPU: a maintained route is within 15% (or faster) in every cell"
    elif wins:
        overall = f"MIXED on this CPU: beats it by more than 15% in {len(wins)} of {len(wins) + len(losses)} cells ({'; '.join(wins)})"
    else:
        overall = "no verdict: nothing comparable was timed"
    lines.append(f"  verdict: {overall}")
    other = (
        "AVX2-only (AMD EPYC Zen 2/3, or this CPU limited to AVX2)"
        if "avx512f" in flags
        else "Intel / AVX-512"
    )
    lines.append(
        f"  the {other} column is not measured here: the rule needs both CPU kinds"
        + (
            " (on this CPU: ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 "
            "MKL_ENABLE_INSTRUCTIONS=AVX2 FOXHUNT_CPU_ISA=avx2)"
            if "avx512f" in flags
            else ""
        )
    )
    return lines
