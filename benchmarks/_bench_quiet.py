"""How busy the machine is (Linux /proc/stat): how many cores other processes keep busy
while a measurement runs, and waiting for them to go quiet before one starts."""

from __future__ import annotations

import os
import resource
import time


def cpu_sample() -> tuple[int, int] | None:
    """(busy, total) CPU ticks of the whole machine so far (Linux /proc/stat), else None."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def machine_busy_cores(
    before: tuple[int, int] | None, after: tuple[int, int] | None
) -> float | None:
    """Cores the whole machine kept busy between two `cpu_sample`s."""
    if before is None or after is None or after[1] == before[1]:
        return None
    return (os.cpu_count() or 1) * (after[0] - before[0]) / (after[1] - before[1])


def busy_cores_now(seconds: float = 1.0) -> float | None:
    """Cores busy over the next `seconds`, all processes (this one idles meanwhile)."""
    before = cpu_sample()
    time.sleep(seconds)
    return machine_busy_cores(before, cpu_sample())


def wait_until_quiet(max_seconds: float, max_cores: float) -> float | None:
    """Poll until other processes use < `max_cores` cores or `max_seconds` pass; returns
    the last reading (None where /proc/stat is unavailable)."""
    deadline = time.monotonic() + max_seconds
    busy = busy_cores_now()
    while busy is not None and busy >= max_cores and time.monotonic() < deadline:
        busy = busy_cores_now(2.0)
    return busy


class OtherCores:
    """Context manager: cores other processes kept busy while the block ran (``value``)."""

    def __enter__(self) -> OtherCores:
        self.value: float | None = None
        self._own = resource.getrusage(resource.RUSAGE_SELF)
        self._machine = cpu_sample()
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._start
        busy = machine_busy_cores(self._machine, cpu_sample())
        own = resource.getrusage(resource.RUSAGE_SELF)
        used = own.ru_utime + own.ru_stime - self._own.ru_utime - self._own.ru_stime
        if busy is not None and wall > 0:
            self.value = max(0.0, busy - used / wall)
