"""Training throughput of foxhunt's TFT against pytorch-forecasting's, same architecture, CPU.

    .venv-bench/bin/python benchmarks/throughput.py [--steps N] [--repeats R] [--json]

One training step is: zero grads, forward, quantile loss, backward, ``torch.optim.Adam`` step.
Both models see the same synthetic batches (same values, mapped to each library's tensors).
The report holds, for each library: parameter count, median step time and samples/s over the
timed steps after warm-up, bytes autograd saves for backward; the speed ratio (``--repeats R``
interleaves pf, foxhunt, pf, foxhunt... and takes the median ratio); foxhunt's data-loader
windows/s on its built-in synthetic bars; inference latency (batch 1) and throughput (large
batch); and a short accuracy check (both trained for the same steps on the same batches of a
learnable target). pytorch-forecasting is optional: without it foxhunt's numbers are still
reported (install it with ``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from foxhunt import TemporalFusionTransformer, TFTBatch, TFTConfig, quantile_loss
from foxhunt.model import grn_tail

QUANTILES = (0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98)
PF_INSTALL_HINT = (
    "pytorch-forecasting is not importable: only foxhunt's numbers are reported. "
    "Install the comparison with `pip install -e .[bench]`."
)


@dataclass(frozen=True, kw_only=True)
class ModelShape:
    """The TFT both libraries build, and the batches they are timed on."""

    batch_size: int = 32
    """Windows per training batch."""
    lookback: int = 64
    """Encoder time steps."""
    horizon: int = 8
    """Decoder time steps (forecast horizon)."""
    hidden_size: int = 64
    """d_model after variable selection."""
    variable_hidden_size: int = 16
    """Per-variable embedding width (pytorch-forecasting's ``hidden_continuous_size``)."""
    attention_heads: int = 4
    """Interpretable attention heads."""
    quantiles: tuple[float, ...] = QUANTILES
    """Predicted quantile levels."""
    num_static: int = 5
    """Static reals."""
    num_observed: int = 210
    """Past-only (observed) reals; the encoder sees num_observed + num_known variables."""
    num_known: int = 10
    """Known reals, seen by the encoder and the decoder."""
    dropout: float = 0.1
    """Dropout rate of both models."""

    def __post_init__(self) -> None:
        for name in ("batch_size", "lookback", "horizon", "hidden_size", "variable_hidden_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"ModelShape.{name} must be >= 1, got {getattr(self, name)}")
        if self.num_static < 2 or self.num_known < 2 or self.num_observed < 1:
            # pytorch-forecasting's variable selection skips the selection weights for a
            # single variable; keep >= 2 in every group so both models do the same work.
            raise ValueError("ModelShape: use num_static >= 2, num_known >= 2, num_observed >= 1")

    @property
    def num_past(self) -> int:
        return self.num_observed + self.num_known

    def foxhunt_config(self) -> TFTConfig:
        return TFTConfig(
            num_static=self.num_static,
            num_past=self.num_past,
            num_future=self.num_known,
            hidden_size=self.hidden_size,
            variable_hidden_size=self.variable_hidden_size,
            attention_heads=self.attention_heads,
            lookback=self.lookback,
            horizon=self.horizon,
            quantiles=self.quantiles,
            dropout=self.dropout,
        )


#: The CPU reference configuration of issue 5.
REFERENCE = ModelShape()
#: A small model with the same architecture for the accuracy check: pytorch-forecasting's
#: per-variable Python loop makes the reference shape too slow to train for long on 2 cores.
ACCURACY_SHAPE = ModelShape(
    lookback=24, horizon=8, hidden_size=16, variable_hidden_size=8, num_static=2,
    num_observed=6, num_known=2,
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class BenchConfig:
    """What to measure and for how long."""

    shape: ModelShape = REFERENCE
    """Model and batch shape of the timing, memory and inference measurements."""
    threads: int = 2
    """torch intra-op threads."""
    steps: int = 5
    """Timed training steps per library per repeat."""
    warmup: int = 3
    """Untimed steps before the first repeat (1 before each later one)."""
    repeats: int = 3
    """Interleaved repeats (pf, foxhunt, pf, foxhunt...); the ratio is their median."""
    lr: float = 1e-3
    """Adam learning rate (pytorch-forecasting's default)."""
    seed: int = 0
    """Seed of the synthetic batches and of both models' initialization."""
    include_pf: bool = True
    """Measure pytorch-forecasting too, when it is importable."""
    loader_days: int = 60
    """Sessions of foxhunt's synthetic bars for the loader measurement; 0 skips it."""
    latency_reps: int = 50
    """Batch-1 inference calls timed (median reported)."""
    inference_batch: int = 1024
    """Batch size of the inference-throughput measurement."""
    inference_reps: int = 3
    """Large-batch inference calls timed (median reported)."""
    pf_inference_batch: bool = False
    """Time pytorch-forecasting at `inference_batch` too (about a minute per call at the
    reference shape on 2 cores, so off by default)."""
    accuracy_shape: ModelShape = ACCURACY_SHAPE
    """Model shape of the accuracy check."""
    accuracy_steps: int = 300
    """Training steps of each library in the accuracy check; 0 skips it."""
    accuracy_eval_batches: int = 8
    """Held-out batches the trained models are evaluated on."""
    quiet_wait_s: float = 0.0
    """Before each repeat, wait up to this long for the other processes on the machine to
    use less than `quiet_cores` cores (Linux /proc/stat); 0 = do not wait."""
    quiet_cores: float = 0.3
    """See `quiet_wait_s`."""
    retries: int = 0
    """Repeats that may be measured again because another process took the cores: a repeat
    is redone when other processes kept more than `quiet_cores` cores busy during a step."""
    profile: bool = False
    """Print torch.profiler's top operators of one foxhunt training step."""


# --------------------------------------------------------------------------- synthetic data


@dataclass(frozen=True, kw_only=True)
class SyntheticBatch:
    """One batch in a library-neutral layout.

    static [B, S], past_observed [B, L, O], past_known [B, L, K], future_known [B, H, K],
    target_past [B, L], target [B, H].
    """

    static: Tensor
    past_observed: Tensor
    past_known: Tensor
    future_known: Tensor
    target_past: Tensor
    target: Tensor

    @property
    def batch_size(self) -> int:
        return int(self.static.shape[0])

    def foxhunt(self) -> TFTBatch:
        """foxhunt's batch: past holds the observed inputs, then the known ones."""
        past = torch.cat([self.past_observed, self.past_known], dim=-1)  # [B, L, O + K]
        return TFTBatch(static=self.static, past=past, future=self.future_known, target=self.target)


#: Noise scale of the synthetic target; the rest of it is a function of the inputs.
TARGET_NOISE = 0.5


def synthetic_batch(shape: ModelShape, generator: torch.Generator) -> SyntheticBatch:
    """Standard-normal inputs and a learnable target.

    target[b, h] = future_known[b, h, 0] + 0.5 * past_observed[b, -1, 0]
                   + 0.5 * tanh(static[b, 0]) * past_known[b, -1, 1] + TARGET_NOISE * noise.
    """
    b, lb, h = shape.batch_size, shape.lookback, shape.horizon

    def normal(*size: int) -> Tensor:
        return torch.randn(*size, generator=generator)

    static = normal(b, shape.num_static)
    past_observed = normal(b, lb, shape.num_observed)
    past_known = normal(b, lb, shape.num_known)
    future_known = normal(b, h, shape.num_known)
    signal = (
        future_known[:, :, 0]
        + 0.5 * past_observed[:, -1, :1]
        + 0.5 * torch.tanh(static[:, :1]) * past_known[:, -1, 1:2]
    )  # [B, H]
    target = signal + TARGET_NOISE * normal(b, h)
    return SyntheticBatch(
        static=static,
        past_observed=past_observed,
        past_known=past_known,
        future_known=future_known,
        target_past=normal(b, lb),
        target=target,
    )


def synthetic_batches(shape: ModelShape, count: int, seed: int) -> list[SyntheticBatch]:
    generator = torch.Generator().manual_seed(seed)
    return [synthetic_batch(shape, generator) for _ in range(count)]


def oracle_loss(quantiles: Sequence[float], noise: float = TARGET_NOISE) -> float:
    """Expected pinball loss (foxhunt's scale) of the true conditional quantiles.

    For Gaussian noise of scale s the loss at level q is s * pdf(ppf(q)); averaged over q.
    """
    normal = statistics.NormalDist()
    return statistics.fmean(noise * normal.pdf(normal.inv_cdf(q)) for q in quantiles)


# --------------------------------------------------------------------------- the two libraries


class Runner(Protocol):
    """One library's model behind a common interface; losses are on foxhunt's scale."""

    name: str
    model: nn.Module
    loss_scale: float
    """Multiplier taking the library's loss to foxhunt's scale (the mean pinball loss)."""

    def prepare(self, batch: SyntheticBatch) -> object:
        """The batch as the library's model takes it (built once, outside the timing)."""
        ...

    def loss(self, inputs: object, target: Tensor) -> Tensor:
        """Forward and quantile loss; the loss is what ``backward`` is called on."""
        ...

    def predict(self, inputs: object) -> Tensor:
        """Quantiles [B, H, Q]."""
        ...


class FoxhuntRunner:
    name = "foxhunt"
    loss_scale = 1.0

    def __init__(self, shape: ModelShape, seed: int) -> None:
        torch.manual_seed(seed)
        self.config = shape.foxhunt_config()
        self.model: nn.Module = TemporalFusionTransformer(self.config)

    def prepare(self, batch: SyntheticBatch) -> object:
        return batch.foxhunt()

    def loss(self, inputs: object, target: Tensor) -> Tensor:
        assert isinstance(inputs, TFTBatch)
        return quantile_loss(self.predict(inputs), target, self.config.quantiles)

    def predict(self, inputs: object) -> Tensor:
        assert isinstance(inputs, TFTBatch)
        return self.model(inputs).quantiles


class PFRunner:
    """pytorch-forecasting's TFT; its QuantileLoss is halved to foxhunt's scale for reports
    (it multiplies the pinball loss by 2), which does not change Adam's steps."""

    name = "pytorch-forecasting"
    loss_scale = 0.5

    def __init__(self, shape: ModelShape, seed: int, pf: ModuleType) -> None:
        self.pf = pf
        torch.manual_seed(seed)
        layout = pf.PFLayout.make(
            num_static=shape.num_static, num_observed=shape.num_observed, num_known=shape.num_known
        )
        self.model: nn.Module = pf.build_pf_tft(
            layout,
            hidden_size=shape.hidden_size,
            hidden_continuous_size=shape.variable_hidden_size,
            attention_heads=shape.attention_heads,
            quantiles=shape.quantiles,
            dropout=shape.dropout,
            lookback=shape.lookback,
        )

    def prepare(self, batch: SyntheticBatch) -> object:
        return self.pf.pf_inputs(**asdict(batch))

    def loss(self, inputs: object, target: Tensor) -> Tensor:
        loss: Tensor = self.pf.pf_loss(self.model, self.predict(inputs), target)
        return loss

    def predict(self, inputs: object) -> Tensor:
        prediction: Tensor = self.pf.pf_prediction(self.model, inputs)
        return prediction


def load_pf() -> ModuleType | None:
    """benchmarks/_pf_tft.py when pytorch-forecasting imports, else None."""
    try:
        import pytorch_forecasting  # noqa: F401
    except ImportError:
        return None
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module("_pf_tft")


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# --------------------------------------------------------------------------- measurements


class Trainer:
    """A runner, its Adam optimizer and prepared batches, cycled step after step."""

    def __init__(self, runner: Runner, batches: Sequence[SyntheticBatch], lr: float) -> None:
        self.runner = runner
        self.optimizer = torch.optim.Adam(runner.model.parameters(), lr=lr)
        self.inputs = [(runner.prepare(b), b.target) for b in batches]
        self._next = 0

    def step(self) -> float:
        """One training step on the next batch; returns the loss (foxhunt's scale)."""
        inputs, target = self.inputs[self._next % len(self.inputs)]
        self._next += 1
        self.runner.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.runner.loss(inputs, target)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach()) * self.runner.loss_scale

    def timed_steps(self, warmup: int, steps: int, max_other_cores: float | None = None) -> Timing:
        """`steps` timed steps after `warmup` untimed ones.

        With `max_other_cores`, stops early (``complete`` False) after a step during which
        other processes kept more than that many cores busy.
        """
        for _ in range(warmup):
            self.step()
        seconds: list[float] = []
        others: list[float] = []
        cpu_start = cpu = resource.getrusage(resource.RUSAGE_SELF)
        machine = cpu_sample()
        complete = True
        for _ in range(steps):
            start = time.perf_counter()
            self.step()
            seconds.append(time.perf_counter() - start)
            before, cpu = cpu, resource.getrusage(resource.RUSAGE_SELF)
            machine_before, machine = machine, cpu_sample()
            busy = machine_busy_cores(machine_before, machine)
            if busy is None:
                continue
            own = cpu.ru_utime + cpu.ru_stime - before.ru_utime - before.ru_stime
            others.append(max(0.0, busy - own / seconds[-1]))
            if max_other_cores is not None and others[-1] > max_other_cores:
                complete = False
                break
        return Timing(
            seconds=seconds,
            user_s=cpu.ru_utime - cpu_start.ru_utime,
            system_s=cpu.ru_stime - cpu_start.ru_stime,
            other_cores=max(others) if others else None,
            complete=complete,
        )


@dataclass(frozen=True, kw_only=True)
class Timing:
    """Wall seconds of each timed step, and the CPU time the process used over all of them."""

    seconds: list[float]
    user_s: float
    system_s: float
    other_cores: float | None = None
    """Most cores other processes kept busy during any one timed step (None: unknown)."""
    complete: bool = True
    """False when the steps were cut short because other processes took the cores."""

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def busy_cores(self) -> float:
        """CPU seconds per wall second: near the thread count when nothing else competed."""
        return (self.user_s + self.system_s) / sum(self.seconds)


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


def _median_seconds(fn: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True, kw_only=True)
class LibraryResult:
    parameters: int
    step_s: list[float]
    """Median step seconds of each repeat."""
    median_step_s: float
    """Median over repeats of the per-repeat median."""
    samples_per_s: float
    busy_cores: list[float]
    """CPU seconds per wall second of each repeat's timed steps (ideal: the thread count;
    lower means other processes took the cores)."""
    system_share: list[float]
    """Share of that CPU time spent in the kernel (page faults of fresh allocations)."""
    other_cores: list[float | None]
    """Most cores other processes kept busy during any timed step of each repeat."""
    saved_for_backward_bytes: int
    inference: InferenceResult | None = None


@dataclass(frozen=True, kw_only=True)
class Report:
    config: dict[str, Any]
    machine: dict[str, Any]
    foxhunt: LibraryResult
    pf: LibraryResult | None
    pf_missing: str | None
    ratios: list[float]
    """foxhunt samples/s over pf samples/s, per repeat."""
    median_ratio: float | None
    loader: LoaderResult | None
    loader_to_train_ratio: float | None
    """Loader windows/s over foxhunt's training samples/s."""
    accuracy: AccuracyResult | None
    profile: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def source_state() -> str | None:
    """The checkout's commit, with "+dirty" when foxhunt's model files differ from it."""
    repo = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "src/foxhunt/model")
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def machine_info(threads: int) -> dict[str, Any]:
    return {
        "foxhunt_source": source_state(),
        "fused_cpu_kernel": grn_tail.load() is not None,
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
        "loadavg_start": list(os.getloadavg()),
    }


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

    batches = synthetic_batches(shape, 4, config.seed)
    runners: list[Runner] = [FoxhuntRunner(shape, config.seed)]
    if pf is not None:
        runners.insert(0, PFRunner(shape, config.seed, pf))  # pf first: pf, foxhunt, pf, ...
    trainers = [Trainer(r, batches, config.lr) for r in runners]
    for runner in runners:
        say(f"{runner.name}: {parameter_count(runner.model):,} parameters")

    timings: dict[str, list[Timing]] = {r.name: [] for r in runners}
    background: list[float | None] = []
    discarded = 0
    while len(background) < config.repeats:
        repeat = len(background) + 1
        warmup = config.warmup if repeat + discarded == 1 else min(1, config.warmup)
        busy = (
            wait_until_quiet(config.quiet_wait_s, config.quiet_cores)
            if config.quiet_wait_s > 0
            else busy_cores_now(0.5)
        )
        may_retry = discarded < config.retries
        limit = config.quiet_cores if may_retry else None
        pair: dict[str, Timing] = {}
        for trainer in trainers:  # pf, then foxhunt: run back to back
            timing = trainer.timed_steps(warmup, config.steps, limit)
            pair[trainer.runner.name] = timing
            other = "n/a" if timing.other_cores is None else f"{timing.other_cores:.2f}"
            cut = "" if timing.complete else "; cut short"
            say(
                f"repeat {repeat}/{config.repeats} {trainer.runner.name}: median "
                f"{timing.median_s:.3f} s/step (min {min(timing.seconds):.3f}, max "
                f"{max(timing.seconds):.3f}; {timing.busy_cores:.2f} own busy cores, "
                f"others up to {other}{cut})"
            )
            if not timing.complete:
                break
        disturbed = len(pair) < len(trainers) or any(not t.complete for t in pair.values())
        if disturbed and may_retry:
            discarded += 1
            say(f"repeat {repeat} disturbed by other processes: measuring it again")
            continue
        background.append(busy)
        for name, timing in pair.items():
            timings[name].append(timing)

    results: dict[str, LibraryResult] = {}
    for runner in runners:
        if config.quiet_wait_s > 0:
            wait_until_quiet(config.quiet_wait_s, config.quiet_cores)
        saved = saved_for_backward_bytes(runner, batches[0])
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
    )


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None or math.isnan(value) else format(value, spec)


def format_report(report: Report) -> str:
    """The report as a Markdown table plus notes."""
    fox, pf = report.foxhunt, report.pf
    mib = 2**20

    def row(label: str, pf_value: str, fox_value: str) -> str:
        return f"| {label} | {pf_value} | {fox_value} |"

    def inf(result: LibraryResult | None) -> tuple[str, str]:
        if result is None or result.inference is None:
            return "n/a", "n/a"
        i = result.inference

        def mark(text: str, others: float | None) -> str:
            return text + (" *" if others is not None and others > quiet else "")

        return (
            mark(_fmt(i.latency_ms, ".2f"), i.other_cores_latency),
            mark(_fmt(i.throughput_windows_per_s, ",.0f"), i.other_cores_throughput),
        )

    quiet = report.config["quiet_cores"]
    pf_lat, pf_thr = inf(pf)
    fox_lat, fox_thr = inf(fox)
    shape = report.config["shape"]
    lines = [
        f"batch {shape['batch_size']}, lookback {shape['lookback']}, horizon {shape['horizon']}, "
        f"hidden {shape['hidden_size']}, per-variable {shape['variable_hidden_size']}, "
        f"{shape['attention_heads']} heads, {len(shape['quantiles'])} quantiles, "
        f"{shape['num_static']} static / {shape['num_observed'] + shape['num_known']} past / "
        f"{shape['num_known']} future variables; {report.machine['torch_threads']} threads, "
        f"{report.config['repeats']} repeats x {report.config['steps']} timed steps",
        "",
        "| | pytorch-forecasting | foxhunt |",
        "| --- | ---: | ---: |",
        row(
            "parameters",
            f"{pf.parameters:,}" if pf else "n/a",
            f"{fox.parameters:,}",
        ),
        row(
            "training step, s (median)",
            _fmt(pf.median_step_s if pf else None, ".3f"),
            _fmt(fox.median_step_s, ".3f"),
        ),
        row(
            "training samples/s",
            _fmt(pf.samples_per_s if pf else None, ".1f"),
            _fmt(fox.samples_per_s, ".1f"),
        ),
        row(
            "saved for backward, MiB",
            _fmt(pf.saved_for_backward_bytes / mib if pf else None, ".1f"),
            _fmt(fox.saved_for_backward_bytes / mib, ".1f"),
        ),
        row("inference latency, batch 1, ms", pf_lat, fox_lat),
        row(f"inference windows/s, batch {report.config['inference_batch']}", pf_thr, fox_thr),
        "",
    ]
    if any(" *" in cell for cell in (pf_lat, pf_thr, fox_lat, fox_thr)):
        lines.append(f"* other processes kept more than {quiet} cores busy during this measurement")
    if report.median_ratio is not None:
        per = ", ".join(f"{r:.2f}" for r in report.ratios)
        lines.append(f"foxhunt / pf training samples/s: median {report.median_ratio:.2f}x ({per})")
    if report.pf_missing:
        lines.append(report.pf_missing)
    loader = report.loader
    if loader is not None:
        if loader.windows_per_s is None:
            lines.append(f"loader: not measured ({loader.error})")
        else:
            lines.append(
                f"loader: {loader.windows_per_s:,.0f} windows/s over {loader.windows:,} windows "
                f"(prepare_data {loader.prepare_s:.1f} s); "
                f"{_fmt(report.loader_to_train_ratio, '.0f')}x foxhunt's training samples/s"
            )
    acc = report.accuracy
    if acc is not None:
        names = sorted(acc.eval_loss)
        lines.append(
            f"accuracy ({acc.steps} steps, small shape; pinball loss, foxhunt's scale; "
            f"zero forecast {acc.zero_forecast_loss:.4f}, oracle {acc.oracle_loss:.4f}):"
        )
        for name in names:
            lines.append(
                f"  {name}: train {acc.train_loss_first[name]:.4f} -> "
                f"{acc.train_loss_last[name]:.4f}, held-out {acc.eval_loss[name]:.4f} "
                f"({acc.seconds[name]:.1f} s)"
            )
    for name, result in (("pytorch-forecasting", pf), ("foxhunt", fox)):
        if result is None:
            continue
        own = ", ".join(f"{b:.2f}" for b in result.busy_cores)
        others = ", ".join("n/a" if o is None else f"{o:.2f}" for o in result.other_cores)
        lines.append(
            f"{name}, per repeat: own busy cores {own}; "
            f"most cores used by other processes in one step {others}"
        )
    start, end = report.machine["loadavg_start"], report.machine.get("loadavg_end")
    load = f"load average (1/5/15 min) at start {start[0]:.2f}/{start[1]:.2f}/{start[2]:.2f}"
    if end:
        load += f", at end {end[0]:.2f}/{end[1]:.2f}/{end[2]:.2f}"
    lines.append(load)
    lines.append(
        f"foxhunt source: {report.machine.get('foxhunt_source') or 'unknown'}; fused CPU kernel "
        f"{'on' if report.machine.get('fused_cpu_kernel') else 'OFF (ATen path)'}; "
        f"torch {report.machine['torch']}, {report.machine['cpu_count']} CPUs"
    )
    background = report.machine.get("background_busy_cores") or []
    if any(b is not None for b in background):
        lines.append(
            "cores busy with other processes just before each repeat: "
            + ", ".join("n/a" if b is None else f"{b:.2f}" for b in background)
            + f"; repeats discarded as disturbed: {report.machine.get('repeats_discarded', 0)}"
        )
    if report.profile:
        lines += ["", "foxhunt training step, top operators:", report.profile]
    return "\n".join(lines)


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
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--save", type=Path, metavar="PATH", help="also write the JSON report")
    args = parser.parse_args(argv)
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
    )
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
