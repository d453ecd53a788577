"""Memory benchmark of activation checkpointing: plain vs each segment alone vs full.

For one model config and batch, each mode is measured three ways, each on its own step so
that no instrument disturbs another:

* bytes saved for backward: :class:`~foxhunt.memory.saved.SavedTensorMeter` over forward +
  loss (distinct storages, parameters excluded, checkpointed segments' kept inputs included);
* peak memory of forward + loss + backward: CUDA ``max_memory_allocated``, or on CPU the live
  tensor storages counted by :class:`~foxhunt.memory.peak.LiveStorageTracker` (parameters,
  batch and gradients included);
* step time of forward + loss + backward: the modes take turns step after step (in ABBA
  order), so a busy machine slows them alike; the ratio is the median of per-round ratios
  to the plain step.

Every forward of a measurement starts from the same seed: all modes draw the same dropout masks.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import torch
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.bench.presets import PRESETS as PRESETS  # here too, as before they moved
from foxhunt.bench.presets import QUANTILES_7 as QUANTILES_7
from foxhunt.bench.presets import Preset as Preset
from foxhunt.memory.moments import batch_tensors
from foxhunt.memory.peak import LiveStorageTracker, cuda_peak
from foxhunt.memory.saved import measure_saved
from foxhunt.model.config import SEGMENTS, TFTConfig
from foxhunt.model.factory import DEFAULT_MODEL, build_model
from foxhunt.task import batch_loss
from foxhunt.transforms import Policy, apply_checkpointing, apply_model_transforms


def default_modes() -> list[str]:
    """Plain, each segment alone, then everything."""
    return ["none", *SEGMENTS, "full"]


def mode_policy(mode: str) -> Policy:
    """ "none" and "full" are policies; a segment name is the policy of that segment alone;
    "a+b" checkpoints a and b."""
    return mode if mode in ("none", "full") else tuple(mode.split("+"))


def random_batch(
    cfg: TFTConfig, batch_size: int, *, seed: int = 0, device: torch.device | str = "cpu"
) -> TFTBatch:
    """A batch of standard-normal inputs and targets, every input kind of ``cfg`` present."""
    d = cfg.inputs
    g = torch.Generator().manual_seed(seed)
    codes = None
    if d.static_cardinalities:
        codes = torch.stack(
            [torch.randint(0, c, (batch_size,), generator=g) for c in d.static_cardinalities],
            dim=-1,
        )
    return TFTBatch(
        static=torch.randn(batch_size, d.num_static, generator=g),
        past=torch.randn(batch_size, d.lookback, d.num_past, generator=g),
        future=torch.randn(batch_size, d.horizon, d.num_future, generator=g),
        target=torch.randn(batch_size, d.horizon, generator=g),
        static_categorical=codes,
        # the baseline's standard deviation per target: positive, around 1 in scaled units
        scale=torch.rand(batch_size, d.horizon, generator=g) + 0.5
        if cfg.output == "baseline"
        else None,
        vol_signal=torch.randn(batch_size, d.vol_signals, generator=g) * 0.3
        if d.vol_signals
        else None,
    ).to(device)


def measure_peak(
    model: nn.Module, loss_fn: Callable[[], Tensor], batch: TFTBatch
) -> tuple[int, str]:
    """Peak bytes of forward + loss + backward, parameters, batch and gradients included, and
    where it was reached (on CPU: the op and the pass; on CUDA not known: "")."""
    device = next(model.parameters()).device
    model.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        loss_fn().backward()
        torch.cuda.synchronize(device)
        peak, where = cuda_peak(device), ""
    else:
        tracker = LiveStorageTracker()
        tracker.track(*model.parameters(), *model.buffers(), *batch_tensors(batch))
        with tracker:
            loss_fn().backward()
        peak, where = tracker.peak, tracker.peak_at
    model.zero_grad(set_to_none=True)
    return peak, where


@dataclass
class ModeResult:
    """One mode's measurements; None where not measured; ``oom`` on a CUDA out-of-memory."""

    mode: str
    segments: list[str]
    saved_bytes: int | None = None
    kept_input_bytes: int | None = None  # part of saved_bytes held by checkpoint for recompute
    saved_by_owner: dict[str, int] = field(default_factory=dict)
    peak_bytes: int | None = None
    peak_at: str = ""  # CPU: the op (and pass) at which the peak was reached
    step_ms: float | None = None
    step_times_ms: list[float] = field(default_factory=list)  # every timed step, in order
    time_ratio: float | None = None  # median over rounds of step time / plain step time
    oom: bool = False


@dataclass
class BenchReport:
    preset: str
    config: dict[str, Any]
    batch_size: int
    device: str
    threads: int
    torch_version: str
    memory_limit_gb: float | None
    results: list[ModeResult]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_benchmark(
    cfg: TFTConfig,
    batch_size: int,
    *,
    preset: str = "custom",
    modes: Sequence[str] | None = None,
    device: torch.device | str = "cpu",
    steps: int = 7,
    warmup: int = 2,
    measure_time: bool = True,
    measure_peak_memory: bool = True,
    memory_limit_gb: float | None = None,
    seed: int = 0,
    batch: TFTBatch | None = None,
) -> BenchReport:
    """Measure every mode (``default_modes()`` unless given) of ``cfg`` at ``batch_size``, on
    ``batch`` (real windows) or a seeded random batch of that size."""
    device = torch.device(device)
    modes = list(modes or default_modes())
    if device.type == "cuda" and memory_limit_gb is not None:
        cap_cuda_memory(device, memory_limit_gb)
    torch.manual_seed(seed)
    model = apply_model_transforms(build_model(DEFAULT_MODEL, cfg), cfg).to(device).train()
    batch = (
        random_batch(cfg, batch_size, seed=seed, device=device)
        if batch is None
        else batch.to(device)
    )

    def loss_fn() -> Tensor:
        torch.manual_seed(seed)  # the same dropout masks in every mode
        return batch_loss(model, batch, cfg.quantiles)

    results = []
    for mode in modes:
        result = ModeResult(mode, apply_checkpointing(model, mode_policy(mode)))
        try:
            saved = measure_saved(model, loss_fn)
            result.saved_bytes, result.kept_input_bytes = saved.total, saved.checkpoint_inputs
            result.saved_by_owner = saved.by_owner
            if measure_peak_memory:
                result.peak_bytes, result.peak_at = measure_peak(model, loss_fn, batch)
        except torch.cuda.OutOfMemoryError:
            result.oom = True
            _release(model, device)
        results.append(result)
    if measure_time:
        timed = [r for r in results if not r.oom]
        _time_modes(model, loss_fn, timed, steps=steps, warmup=warmup, device=device)
    apply_checkpointing(model, "none")
    return BenchReport(
        preset=preset,
        config=cfg.to_dict(),
        batch_size=batch_size,
        device=str(device),
        threads=torch.get_num_threads(),
        torch_version=torch.__version__,
        memory_limit_gb=memory_limit_gb,
        results=results,
    )


def _time_modes(
    model: nn.Module,
    loss_fn: Callable[[], Tensor],
    results: list[ModeResult],
    *,
    steps: int,
    warmup: int,
    device: torch.device,
) -> None:
    """Rounds of one step per mode; median step time and median ratio to the plain step."""
    times: dict[str, list[float]] = {r.mode: [] for r in results}
    for round_ in range(warmup + steps):
        for r in results if round_ % 2 else results[::-1]:  # ABBA order: drift cancels
            apply_checkpointing(model, mode_policy(r.mode))
            model.zero_grad(set_to_none=True)
            try:
                elapsed = _timed_step(loss_fn, device)
            except torch.cuda.OutOfMemoryError:
                r.oom = True
                _release(model, device)
                continue
            if round_ >= warmup:
                times[r.mode].append(elapsed)
    base = times.get("none", [])
    for r in results:
        t = times[r.mode]
        if not t:
            continue
        r.step_ms = 1e3 * statistics.median(t)
        r.step_times_ms = [round(1e3 * x, 1) for x in t]
        if base and len(t) == len(base):
            r.time_ratio = statistics.median(a / b for a, b in zip(t, base, strict=True))
    model.zero_grad(set_to_none=True)


def _timed_step(loss_fn: Callable[[], Tensor], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    loss_fn().backward()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def cap_cuda_memory(device: torch.device, limit_gb: float) -> None:
    """Make the CUDA caching allocator fail beyond ``limit_gb``, as a smaller card would."""
    total = torch.cuda.get_device_properties(device).total_memory
    fraction = min(1.0, limit_gb * (1 << 30) / total)
    torch.cuda.set_per_process_memory_fraction(fraction, device)


def _release(model: nn.Module, device: torch.device) -> None:
    model.zero_grad(set_to_none=True)
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def with_overrides(cfg: TFTConfig, **overrides: Any) -> TFTConfig:
    """``cfg`` with the given fields replaced; None values are ignored."""
    return replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
