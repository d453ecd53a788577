"""How many CPU threads this process's torch ops use (``training.threads``, ``--threads``).

A torch process takes every core by default. On a machine where other processes already keep
cores busy that oversubscribes them: OpenMP's threads wait for each other at every parallel
region's end, so one descheduled thread stalls the rest. Measured with one competing 2-thread
process on 2 cores (docs/performance.md, "Threads"): foxhunt's reference step took about twice
as long at 2 threads as at 1. So the default (0 = auto) gives foxhunt the cores the others
leave idle when it starts, at least one; an explicit ``--threads N`` or ``OMP_NUM_THREADS``
wins. It sets this process's torch threads only, and is decided once, when a trainer starts.

Results do not depend on the choice beyond float rounding: the thread count changes how sums
are split, not what is summed (tests/training/test_threads.py trains at 1 and 2 threads).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from foxhunt.errors import ConfigError

log = logging.getLogger("foxhunt.train")

#: seconds of /proc/stat sampled to see how many cores other processes keep busy
SAMPLE_S = 0.2
#: foxhunt's last torch.set_num_threads, to tell its own setting from the user's
_ours: int | None = None


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    why: str

    def line(self) -> str:
        return f"threads: {self.threads} ({self.why})"


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) ticks of the whole machine so far, from /proc/stat (Linux only)."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_cores(seconds: float = SAMPLE_S) -> float | None:
    """Cores other processes keep busy over the next `seconds` (this one sleeps meanwhile);
    the 1-minute load average where /proc/stat is unreadable; None when neither is known."""
    before = _cpu_ticks()
    if before is None:
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):
            return None
    time.sleep(seconds)
    after = _cpu_ticks()
    if after is None or after[1] == before[1]:
        return None
    return (os.cpu_count() or 1) * (after[0] - before[0]) / (after[1] - before[1])


def omp_threads(environ: dict[str, str] | os._Environ[str]) -> int | None:
    """OMP_NUM_THREADS as a positive count; None when unset; refused when not a count."""
    text = environ.get("OMP_NUM_THREADS", "").strip()
    if not text:
        return None
    first = text.split(",")[0]  # OpenMP allows a per-level list: the outer level is ours
    if not first.isdigit() or int(first) < 1:
        raise ConfigError(
            f"OMP_NUM_THREADS={text!r} is not a thread count: set it to a whole number >= 1, "
            "or unset it and use --threads"
        )
    return int(first)


def choose_threads(
    requested: int,
    *,
    omp: int | None,
    cores: int,
    current: int,
    others: float | None,
) -> ThreadChoice:
    """The thread count and why: `requested` (> 0) wins, then OMP_NUM_THREADS (`omp`), else
    the cores that others (`others` busy cores) leave idle, at least 1 and at most `current`
    (the ceiling: what the process had before foxhunt set anything)."""
    if requested < 0:
        raise ConfigError(f"training.threads must be >= 0 (0 = auto), got {requested}")
    if requested > 0:
        return ThreadChoice(requested, "--threads")
    if omp is not None:
        return ThreadChoice(omp, f"OMP_NUM_THREADS={omp}")
    ceiling = max(1, min(current, cores))
    if ceiling == 1:
        why = "auto: 1 core" if cores <= 1 else "auto: the process was set to 1 before training"
        return ThreadChoice(1, why)
    if others is None:
        return ThreadChoice(ceiling, f"auto: {cores} cores, load unknown")
    free = max(1, min(ceiling, round(cores - others)))
    return ThreadChoice(
        free, f"auto: {cores} cores, {others:.1f} busy with other processes; --threads N to set"
    )


def apply_threads(requested: int) -> ThreadChoice:
    """Decide (`choose_threads`), set torch's intra-op threads for this process, log it."""
    import torch

    global _ours
    current = torch.get_num_threads()
    # a count foxhunt set itself is no ceiling for a later trainer in the same process
    ceiling = available_cores() if current == _ours else current
    omp = omp_threads(os.environ)
    cores = available_cores()
    needs_load = requested == 0 and omp is None and min(ceiling, cores) > 1
    others = busy_cores() if needs_load else None
    choice = choose_threads(requested, omp=omp, cores=cores, current=ceiling, others=others)
    if choice.threads != current:  # only a count foxhunt changed is its own
        torch.set_num_threads(choice.threads)
        _ours = choice.threads
    log.info(choice.line())
    return choice
