"""The measurements besides training speed: memory saved for backward, inference latency and
throughput, foxhunt's data loader, a short accuracy check, and a profile of one step."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from types import ModuleType
from typing import Any

import torch
from torch import Tensor

from _bench_config import BenchConfig, ModelShape
from _bench_models import (
    FoxhuntRunner,
    PFRunner,
    Runner,
    SyntheticBatch,
    Trainer,
    oracle_loss,
    synthetic_batch,
    synthetic_batches,
)
from _bench_quiet import OtherCores, wait_until_quiet
from foxhunt import quantile_loss


def saved_for_backward_bytes(runner: Runner, batch: SyntheticBatch) -> int:
    """Bytes of the distinct storages autograd saves for backward, parameters excluded."""
    params = {p.untyped_storage().data_ptr() for p in runner.model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: Tensor) -> Tensor:
        storage = tensor.untyped_storage()
        ptr = storage.data_ptr()
        if ptr and ptr not in params:
            saved[ptr] = max(saved.get(ptr, 0), storage.nbytes())
        return tensor

    inputs = runner.prepare(batch)
    runner.model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = runner.loss(inputs, batch.target)
    del loss
    return sum(saved.values())


def memory_shortfall(runner: Runner, shape: ModelShape) -> str | None:
    """Why a training step of `runner` at `shape` would not fit in the memory available now
    (Linux MemAvailable), estimated from the bytes saved for backward at batch 2; None when
    it fits or the memory is unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None
    small = synthetic_batches(replace(shape, batch_size=2), 1, 0)[0]
    # the process peaked at 2.2x the saved bytes (pf at TFT-225: 12.9 GB RSS for 5.7 GiB saved)
    need = 2.5 * saved_for_backward_bytes(runner, small) * shape.batch_size / 2
    if need < 0.8 * available:
        return None
    return f"needs about {need / 2**30:.1f} GiB, {available / 2**30:.1f} GiB available"


def _median_seconds(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _quiet_median_seconds(
    fn: Callable[[], object], reps: int, config: BenchConfig
) -> tuple[float, float | None]:
    """Median seconds of `fn` and the cores others used meanwhile; with a quiet wait
    configured, measured again (up to 3 tries) when others used more than `quiet_cores`."""
    tries = 3 if config.quiet_wait_s > 0 else 1
    for attempt in range(tries):
        if attempt:
            wait_until_quiet(config.quiet_wait_s, config.quiet_cores)
        with OtherCores() as others:
            seconds = _median_seconds(fn, reps)
        if others.value is None or others.value <= config.quiet_cores:
            break
    return seconds, others.value


@dataclass(frozen=True, kw_only=True)
class InferenceResult:
    latency_ms: float
    """Median milliseconds of one batch-1 forward (eval mode, no_grad)."""
    batch_size: int
    throughput_windows_per_s: float | None
    """Windows per second at `batch_size` (None: not measured)."""
    other_cores_latency: float | None = None
    """Cores other processes kept busy while the latency was measured."""
    other_cores_throughput: float | None = None
    """Cores other processes kept busy while the throughput was measured."""


def measure_inference(
    runner: Runner, shape: ModelShape, config: BenchConfig, *, large: bool
) -> InferenceResult:
    generator = torch.Generator().manual_seed(config.seed + 1)
    one = runner.prepare(synthetic_batch(replace(shape, batch_size=1), generator))
    runner.model.eval()
    with torch.no_grad():
        for _ in range(3):
            runner.predict(one)
        latency, latency_others = _quiet_median_seconds(
            lambda: runner.predict(one), config.latency_reps, config
        )
        throughput = throughput_others = None
        if large:
            big_shape = replace(shape, batch_size=config.inference_batch)
            big = runner.prepare(synthetic_batch(big_shape, generator))
            runner.predict(big)
            seconds, throughput_others = _quiet_median_seconds(
                lambda: runner.predict(big), config.inference_reps, config
            )
            throughput = config.inference_batch / seconds
    return InferenceResult(
        latency_ms=1e3 * latency,
        batch_size=config.inference_batch,
        throughput_windows_per_s=throughput,
        other_cores_latency=latency_others,
        other_cores_throughput=throughput_others,
    )


@dataclass(frozen=True, kw_only=True)
class LoaderResult:
    windows_per_s: float | None = None
    """Windows per second of one shuffled epoch of foxhunt's loader (batch 32)."""
    windows: int = 0
    prepare_s: float | None = None
    """Seconds of ``prepare_data`` (generate, validate, featurize, scale, index)."""
    error: str | None = None
    """Why it was not measured."""


def measure_loader(shape: ModelShape, days: int, batch_size: int) -> LoaderResult:
    """One shuffled epoch over foxhunt's built-in synthetic bars, training split."""
    try:
        from foxhunt.data import DataConfig, make_loader, prepare_data
    except ImportError as err:
        return LoaderResult(error=f"foxhunt.data not ready: {err}")
    start = time.perf_counter()
    prepared = prepare_data(
        DataConfig(synthetic_days=days, lookback=shape.lookback, horizon=shape.horizon)
    )
    prepare_s = time.perf_counter() - start
    loader = make_loader(prepared.train, batch_size=batch_size, shuffle=True, seed=0)
    windows = 0
    start = time.perf_counter()
    for batch in loader:
        windows += batch.batch_size
    seconds = time.perf_counter() - start
    return LoaderResult(windows_per_s=windows / seconds, windows=windows, prepare_s=prepare_s)


@dataclass(frozen=True, kw_only=True)
class AccuracyResult:
    steps: int
    shape: dict[str, Any]
    train_loss_first: dict[str, float]
    """Mean training loss of the first 10 steps, per library (foxhunt's pinball scale)."""
    train_loss_last: dict[str, float]
    """Mean training loss of the last 10 steps."""
    eval_loss: dict[str, float]
    """Held-out loss after training (eval mode)."""
    zero_forecast_loss: float
    """Held-out loss of predicting 0 for every quantile."""
    oracle_loss: float
    """Expected loss of the true conditional quantiles: the floor."""
    seconds: dict[str, float]


def evaluate(
    runner: Runner, batches: Sequence[SyntheticBatch], quantiles: Sequence[float]
) -> float:
    runner.model.eval()
    with torch.no_grad():
        losses = [
            float(quantile_loss(runner.predict(runner.prepare(b)), b.target, quantiles))
            for b in batches
        ]
    return statistics.fmean(losses)


def measure_accuracy(config: BenchConfig, pf: ModuleType | None) -> AccuracyResult:
    shape, steps = config.accuracy_shape, config.accuracy_steps
    train = synthetic_batches(shape, steps, seed=config.seed + 10)
    held_out = synthetic_batches(shape, config.accuracy_eval_batches, seed=config.seed + 20)
    runners: list[Runner] = [FoxhuntRunner(shape, config.seed)]
    if pf is not None:
        runners.insert(0, PFRunner(shape, config.seed, pf))
    first, last, evals, seconds = {}, {}, {}, {}
    for runner in runners:
        trainer = Trainer(runner, train, config.lr)
        start = time.perf_counter()
        losses = [trainer.step() for _ in range(steps)]
        seconds[runner.name] = time.perf_counter() - start
        window = max(1, min(10, steps))
        first[runner.name] = statistics.fmean(losses[:window])
        last[runner.name] = statistics.fmean(losses[-window:])
        evals[runner.name] = evaluate(runner, held_out, shape.quantiles)
    zero = statistics.fmean(
        float(
            quantile_loss(
                torch.zeros(*b.target.shape, len(shape.quantiles)), b.target, shape.quantiles
            )
        )
        for b in held_out
    )
    return AccuracyResult(
        steps=steps,
        shape=asdict(shape),
        train_loss_first=first,
        train_loss_last=last,
        eval_loss=evals,
        zero_forecast_loss=zero,
        oracle_loss=oracle_loss(shape.quantiles),
        seconds=seconds,
    )


def profile_step(trainer: Trainer, rows: int = 25) -> str:
    """torch.profiler's top operators (by self CPU time) of two training steps."""
    from torch.profiler import ProfilerActivity, profile

    trainer.step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=False) as prof:
        trainer.step()
        trainer.step()
    table: str = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)
    return table
