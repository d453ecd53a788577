"""The two libraries behind one interface, the synthetic batches they are fed, and the
training loop that times their steps."""

from __future__ import annotations

import importlib
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol

import torch
from torch import Tensor, nn

from _bench_config import ModelShape
from _bench_quiet import cpu_sample, machine_busy_cores
from foxhunt import TFTBatch, apply_model_transforms, quantile_loss
from foxhunt.model.factory import DEFAULT_MODEL, build_model

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
        # the model a run trains: built and transformed as the job does
        self.model: nn.Module = apply_model_transforms(
            build_model(DEFAULT_MODEL, self.config), self.config
        )

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


# --------------------------------------------------------------------------- timing


def to_device(inputs: object, device: torch.device) -> object:
    """A library's prepared inputs (foxhunt's TFTBatch, pytorch-forecasting's dict) on ``device``."""
    if isinstance(inputs, dict):
        return {k: v.to(device) if isinstance(v, Tensor) else v for k, v in inputs.items()}
    to = getattr(inputs, "to", None)
    return inputs if to is None else to(device)


class Trainer:
    """A runner, its Adam optimizer and prepared batches, cycled step after step; on
    ``device`` (the model moved there, the batches copied once). Each step reads its loss
    back, which waits for a GPU's work: the step times hold it."""

    def __init__(
        self,
        runner: Runner,
        batches: Sequence[SyntheticBatch],
        lr: float,
        device: torch.device | None = None,
    ) -> None:
        self.runner = runner
        if device is not None:
            runner.model.to(device)
        self.optimizer = torch.optim.Adam(runner.model.parameters(), lr=lr)
        self.inputs = [(runner.prepare(b), b.target) for b in batches]
        if device is not None:
            self.inputs = [(to_device(x, device), t.to(device)) for x, t in self.inputs]
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
