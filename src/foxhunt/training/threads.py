"""How many CPU threads this process's torch ops use (``training.threads``, ``--threads``).

The count changes the arithmetic: some ATen ops split a reduction between threads (a whole
tensor's sum, LayerNorm's and the LSTM's weight gradients; docs/performance.md, "Threads"),
so the same seed trains other bits at 1 and 2 threads. The default therefore never looks at
the load: it is OMP_NUM_THREADS or MKL_NUM_THREADS when set (torchrun sets the first to 1),
else the cores this process may run on (its CPU affinity), at most what the process was set
to before foxhunt set anything. A job records the count it used in config.json
(``training.threads``), so ``--resume`` and a rerun from config.json train with it.

``auto`` (``0``, the older spelling and what runs before this default saved) keeps the
load-based choice for speed on a shared machine: the cores other processes leave idle when
the run starts. Measured with one competing 2-thread process on 2 cores, foxhunt's reference
step took about twice as long at 2 threads as at 1; results then depend on the neighbours.

A count above the usable cores runs with one warning; one above ``CEILING`` is refused, and so
is an OMP_NUM_THREADS or MKL_NUM_THREADS that is empty, not a count, or above it. The command
line checks those variables before torch is imported (libgomp reads OMP_NUM_THREADS then and
aborts on a huge count: ``check_thread_environment``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from foxhunt.errors import ConfigError

log = logging.getLogger("foxhunt.train")

#: the most threads foxhunt starts: far above any core count it trains on, and below what
#: broke (a 3-step run took 85 s at 1024 threads on 2 cores, did not end in 300 s at 5000,
#: and libgomp ran out of memory at 99999); docs/performance.md, "Threads"
CEILING = 256
#: the environment variables that set the count, the first one set wins
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: the load-based choice's spellings ("auto"; 0 in configs saved before it had a name)
AUTO = ("auto", 0)
#: seconds of /proc/stat sampled to see how many cores other processes keep busy
SAMPLE_S = 0.2
#: foxhunt's last torch.set_num_threads, to tell its own setting from the user's
_ours: int | None = None
#: the last choice applied: a trainer applying the count its job chose says nothing new
_last: ThreadChoice | None = None

Requested = int | str | None


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    why: str
    #: the one warning line of a count above the usable cores, else None
    warning: str | None = None

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


def env_threads(environ: Mapping[str, str], name: str) -> int | None:
    """`name` (OMP_NUM_THREADS, MKL_NUM_THREADS) as a count in [1, CEILING]; None when unset.
    Set but empty, not a whole number, < 1 or above CEILING: ConfigError naming it."""
    if name not in environ:
        return None
    text = environ[name].strip()
    fix = f"set it to a whole number from 1 to {CEILING}, or unset it and use --threads"
    if not text:
        raise ConfigError(f"{name} is set but empty: {fix}")
    # OpenMP allows a per-level list ("2,1"): the outer level is foxhunt's, each must be valid
    items = [item.strip() for item in text.split(",")] if name == "OMP_NUM_THREADS" else [text]
    shown = text if len(text) <= 20 else f"{text[:12]}...({len(text)} characters)"
    for item in items:
        digits = item.lstrip("0")  # "" for 0
        if not (item.isascii() and item.isdigit() and digits):
            raise ConfigError(f"{name}={shown!r} is not a thread count: {fix}")
        if len(digits) > 6 or int(digits) > CEILING:  # int() refuses 4,301 digits
            raise ConfigError(
                f"{name}={shown}: more than {CEILING} threads (foxhunt's ceiling; this machine "
                f"has {available_cores()} usable cores): {fix}"
            )
    return int(items[0])


def env_setting(environ: Mapping[str, str]) -> tuple[str, int] | None:
    """(variable, count) of the first of THREAD_VARIABLES set; every one set is checked."""
    found = [(name, env_threads(environ, name)) for name in THREAD_VARIABLES]
    return next(((name, n) for name, n in found if n is not None), None)


def check_thread_environment(environ: Mapping[str, str] | None = None) -> None:
    """Refuse a bad OMP_NUM_THREADS or MKL_NUM_THREADS (ConfigError): the command line calls
    it before anything imports torch, whose libgomp would read them first."""
    env_setting(os.environ if environ is None else environ)


def check_requested(requested: object, where: str = "training.threads") -> None:
    """ConfigError unless `requested` is None, "auto", 0 or a count in [1, CEILING]."""
    if requested is None or (requested in AUTO and not isinstance(requested, bool)):
        return
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise ConfigError(f'{where}={requested!r}: must be a count of threads, "auto" or None')
    if not 1 <= requested <= CEILING:
        raise ConfigError(
            f'{where}={requested}: must be >= 1 and <= {CEILING} (foxhunt\'s ceiling), "auto" '
            "or None (the usable cores)"
        )


def choose_threads(
    requested: Requested,
    *,
    env: tuple[str, int] | None,
    cores: int,
    current: int,
    others: float | None,
) -> ThreadChoice:
    """The thread count and why. `requested`: a count (wins), None (the default: `env`, the
    first thread variable set, else `cores`, at most `current`, the process's count before
    foxhunt set one) or "auto"/0 (`env`, else the cores that `others` busy cores leave idle,
    at least 1 and at most `current`)."""
    check_requested(requested)
    ceiling = max(1, min(current, cores, CEILING))
    if isinstance(requested, int) and requested not in AUTO:
        choice = ThreadChoice(requested, "--threads")
    elif env is not None:
        choice = ThreadChoice(env[1], f"{env[0]}={env[1]}")
    elif requested is None:
        usable = min(cores, CEILING)
        why = f"the {usable} usable cores" if ceiling == usable else (
            f"{ceiling} of the {usable} usable cores: the process's count before training"
        )  # fmt: skip
        choice = ThreadChoice(ceiling, why)
    else:
        choice = _auto(cores, ceiling, others)
    if choice.threads > cores:
        warning = (
            f"threads: {choice.threads} ({choice.why}) is more than the {cores} usable cores "
            f"of this process: the threads will wait for each other; use at most {cores}"
        )
        choice = replace(choice, warning=warning)
    return choice


def _auto(cores: int, ceiling: int, others: float | None) -> ThreadChoice:
    if ceiling == 1:
        why = "auto: 1 core" if cores <= 1 else "auto: the process was set to 1 before training"
        return ThreadChoice(1, why)
    if others is None:
        return ThreadChoice(ceiling, f"auto: {cores} cores, load unknown")
    free = max(1, min(ceiling, round(cores - others)))
    return ThreadChoice(
        free, f"auto: {cores} cores, {others:.1f} busy with other processes; --threads N to set"
    )


def apply_threads(requested: Requested, *, why: str | None = None) -> ThreadChoice:
    """Decide (`choose_threads`), set torch's intra-op threads for this process and log one
    line: the count, or the warning that names it. `why` replaces the reason of a given count
    (a resumed run's recorded one). A count this process already runs at by foxhunt's last
    choice is returned as that choice, unlogged (the trainer after its job)."""
    import torch

    global _ours, _last
    current = torch.get_num_threads()
    if _last is not None and requested == _last.threads == current and why is None:
        return _last
    # a count foxhunt set itself is no ceiling for a later trainer in the same process
    cores = available_cores()
    ceiling = cores if current == _ours else current
    env = env_setting(os.environ)
    needs_load = requested in AUTO and env is None and min(ceiling, cores) > 1
    others = busy_cores() if needs_load else None
    choice = choose_threads(requested, env=env, cores=cores, current=ceiling, others=others)
    if why is not None and isinstance(requested, int) and requested not in AUTO:
        choice = replace(choice, why=why)
    if choice.threads != current:  # only a count foxhunt changed is its own
        torch.set_num_threads(choice.threads)
        _ours = choice.threads
    _last = choice
    if choice.warning is None:
        log.info(choice.line())
    else:  # the one line, the count and why included
        log.warning(choice.warning)
    return choice
