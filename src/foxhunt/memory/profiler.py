"""Memory snapshots during training, from the right backend, with leak warnings.

CUDA: the caching allocator's statistics (allocated, reserved, peak) and the device total
from NVML when `nvidia-ml-py` is installed (else `torch.cuda.mem_get_info`).
CPU: the process's resident set size (psutil) against the machine's memory; the peak is the
largest RSS seen by this profiler (and the OS high-water mark).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import psutil
import torch

log = logging.getLogger("foxhunt.memory")
MB = 1024 * 1024


@dataclass(frozen=True)
class MemorySnapshot:
    """Memory in MB at one moment. `used` is what this process holds on the backend."""

    backend: str  # "cuda" or "cpu"
    used_mb: float
    total_mb: float
    peak_mb: float
    reserved_mb: float | None = None  # CUDA caching allocator: held but maybe not in use
    time: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _nvml_total_mb(index: int) -> float | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return float(pynvml.nvmlDeviceGetMemoryInfo(handle).total) / MB
    except pynvml.NVMLError:
        return None


class MemoryBackend:
    """Reads memory of one device kind."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.is_cuda = device.type == "cuda"
        self.process = psutil.Process()
        self.peak_rss_mb = 0.0
        self.total_mb = self._total_mb()

    def _total_mb(self) -> float:
        if self.is_cuda:
            index = self.device.index if self.device.index is not None else 0
            nvml = _nvml_total_mb(index)
            return nvml if nvml is not None else torch.cuda.mem_get_info(index)[1] / MB
        return float(psutil.virtual_memory().total) / MB

    def snapshot(self) -> MemorySnapshot:
        now = time.time()
        if self.is_cuda:
            return MemorySnapshot(
                backend="cuda",
                used_mb=torch.cuda.memory_allocated(self.device) / MB,
                total_mb=self.total_mb,
                peak_mb=torch.cuda.max_memory_allocated(self.device) / MB,
                reserved_mb=torch.cuda.memory_reserved(self.device) / MB,
                time=now,
            )
        rss = float(self.process.memory_info().rss) / MB
        self.peak_rss_mb = max(self.peak_rss_mb, rss)
        return MemorySnapshot(
            backend="cpu", used_mb=rss, total_mb=self.total_mb, peak_mb=self.peak_rss_mb, time=now
        )


class MemoryProfiler:
    """A trainer callback: snapshot at epoch start, a debug line every `log_every` batches, a
    warning when memory grew more than `leak_threshold_mb` within an epoch, the delta at
    epoch end. Every event also goes to `sink` (the run's metrics log)."""

    def __init__(
        self,
        device: torch.device,
        *,
        log_every: int = 100,
        leak_threshold_mb: float = 500.0,
        sink: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        if log_every < 1:
            raise ValueError(f"log_every must be >= 1, got {log_every}")
        self.backend = MemoryBackend(device)
        self.log_every = log_every
        self.leak_threshold_mb = leak_threshold_mb
        self.sink = sink
        self.epoch_start: MemorySnapshot | None = None
        self.warned_this_epoch = False
        self.step_in_epoch = 0
        self.events: list[dict[str, Any]] = []
        self.last_step_end = 0.0
        self.step_seconds: list[float] = []  # durations since the last memory line

    def snapshot(self) -> MemorySnapshot:
        return self.backend.snapshot()

    def _emit(self, event: str, snap: MemorySnapshot, **extra: Any) -> dict[str, Any]:
        record = {"event": event, **snap.to_dict(), **extra}
        self.events.append(record)
        if self.sink is not None:
            self.sink(record)
        return record

    # --- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Where the epoch's logging stands. Memory readings are not state: another process
        (a resumed run) measures its own, so growth is counted from the resume on."""
        return {"step_in_epoch": self.step_in_epoch, "warned_this_epoch": self.warned_this_epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step_in_epoch = int(state["step_in_epoch"])
        self.warned_this_epoch = bool(state["warned_this_epoch"])
        self.epoch_start = None  # the next step takes this process's baseline

    # --- trainer hooks -------------------------------------------------------------------
    def on_epoch_start(self, trainer: Any = None) -> None:
        self.warned_this_epoch = False
        self.step_in_epoch = 0
        self._baseline(trainer)

    def _baseline(self, trainer: Any) -> None:
        """Memory now: what growth within the epoch is measured from."""
        self.epoch_start = snap = self.snapshot()
        self.step_seconds = []
        self.last_step_end = time.perf_counter()
        epoch = getattr(getattr(trainer, "state", None), "epoch", None)
        self._emit("memory_epoch_start", snap, epoch=epoch)
        log.debug("memory at epoch start: %.0f MB used of %.0f MB", snap.used_mb, snap.total_mb)

    def on_step_end(self, trainer: Any = None, loss: float | None = None) -> None:
        if self.epoch_start is None:  # attached or resumed mid-epoch: the counts go on
            self._baseline(trainer)
        assert self.epoch_start is not None
        now = time.perf_counter()
        self.step_seconds.append(now - self.last_step_end)
        self.last_step_end = now
        self.step_in_epoch += 1
        if self.step_in_epoch % self.log_every:
            return
        snap = self.snapshot()
        growth = snap.used_mb - self.epoch_start.used_mb
        step = getattr(getattr(trainer, "state", None), "global_step", self.step_in_epoch)
        step_ms = 1000 * sorted(self.step_seconds)[len(self.step_seconds) // 2]
        self.step_seconds = []
        self._emit("memory_step", snap, step=step, growth_mb=growth, step_ms=step_ms)
        log.debug(
            "memory step %s: %.0f MB used (peak %.0f MB, %+.0f MB since epoch start)",
            step,
            snap.used_mb,
            snap.peak_mb,
            growth,
        )
        if growth > self.leak_threshold_mb and not self.warned_this_epoch:
            self.warned_this_epoch = True
            self._emit("memory_leak_warning", snap, step=step, growth_mb=growth)
            log.warning(
                "memory grew %.0f MB since the epoch started (threshold %.0f MB): a leak? "
                "Look for tensors kept with their graphs, e.g. `losses.append(loss)` instead "
                "of `loss.item()`",
                growth,
                self.leak_threshold_mb,
            )

    def on_epoch_end(self, trainer: Any = None, record: dict[str, Any] | None = None) -> None:
        if self.epoch_start is None:
            return
        snap = self.snapshot()
        delta = snap.used_mb - self.epoch_start.used_mb
        epoch = getattr(getattr(trainer, "state", None), "epoch", None)
        self._emit("memory_epoch_end", snap, epoch=epoch, delta_mb=delta)
        log.info(
            "memory: %.0f MB used, peak %.0f MB of %.0f MB (%+.0f MB this epoch)",
            snap.used_mb,
            snap.peak_mb,
            snap.total_mb,
            delta,
        )
        if record is not None:
            record["memory_used_mb"] = snap.used_mb
            record["memory_peak_mb"] = snap.peak_mb
