"""The memory budget planner: from measured per-sample costs to the cheapest plan that fits.

Order of preference (cheapest first):
1. no checkpointing, the whole batch at once;
2. checkpoint the segments whose recomputation costs least per byte it saves, adding them one
   at a time until the predicted peak fits, then dropping those that turn out not to be needed;
3. every useful segment checkpointed and the batch split into micro-batches with gradient
   accumulation: the effective batch size, and so the gradients, stay those of the full batch.

The peak model: fixed bytes (weights, buffers, optimizer state, runtime) plus the highest of
the step's moments (see ``memory/moments.py``), each the saved activations the plan leaves
alive then, times the micro-batch, plus that moment's measured working memory:
- the forward moment: plain segments keep their activations, checkpointed ones only their
  inputs, plus the glue layers' and the loss's;
- each segment's backward (after its recompute, if checkpointed): its activations are there,
  the segments before it still hold what they saved, the ones after it are already freed.
The working memory of a moment is affine in the micro-batch (block buffers and weight
gradients do not scale; input gradients and temporaries do) and, when micro-batches
accumulate, holds the gradients of the earlier ones as well; the whole batch stays on the
device meanwhile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from foxhunt.errors import ConfigError

MB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class Working:
    """Bytes of one moment of the step besides the saved activations the plan decides on:
    working buffers, gradients and the batch, affine in the micro-batch."""

    fixed: float = 0.0  # whatever the micro-batch: block buffers, weight gradients
    per_sample: float = 0.0  # per sample: input gradients, temporaries (< 0: freed by then)
    accumulating: float = 0.0  # more when micro-batches accumulate: the earlier ones' gradients

    def at(self, micro_batch: int, *, accumulating: bool) -> float:
        extra = self.accumulating if accumulating else 0.0
        return self.fixed + micro_batch * self.per_sample + extra


@dataclass(frozen=True, kw_only=True)
class SegmentCost:
    """What one checkpointable segment costs, per sample of the batch."""

    name: str
    saved_bytes: float  # saved for backward when not checkpointed
    kept_bytes: float  # still held when checkpointed (its inputs, RNG state)
    forward_seconds: float  # one more forward: the price of recomputing it
    backward: Working = Working()  # its backward moment's working memory

    @property
    def saving(self) -> float:
        return self.saved_bytes - self.kept_bytes

    @property
    def seconds_per_byte_saved(self) -> float:
        return self.forward_seconds / self.saving if self.saving > 0 else math.inf


@dataclass(frozen=True, kw_only=True)
class CostTable:
    """Measured costs of one model and configuration."""

    fixed_bytes: float  # at every moment: weights, buffers, optimizer state, runtime
    other_saved_bytes: float  # per sample, saved outside the segments (glue layers, loss)
    batch_bytes: float = 0.0  # per sample, the batch itself (all of it stays while micro-batching)
    forward: Working = Working()  # the forward moment's working memory
    segments: tuple[SegmentCost, ...]  # in forward order

    def segment(self, name: str) -> SegmentCost:
        return next(s for s in self.segments if s.name == name)


@dataclass(frozen=True)
class MemoryPlan:
    checkpointing: tuple[str, ...]  # segment names; () = none
    micro_batch_size: int
    accumulation_steps: int
    predicted_peak_bytes: float
    budget_bytes: float

    @property
    def policy(self) -> str | tuple[str, ...]:
        return self.checkpointing or "none"

    def describe(self) -> str:
        what = ", ".join(self.checkpointing) if self.checkpointing else "no checkpointing"
        split = (
            f"micro-batches of {self.micro_batch_size} x {self.accumulation_steps} accumulated"
            if self.accumulation_steps > 1
            else f"batch {self.micro_batch_size} at once"
        )
        return (
            f"memory plan: {what}; {split}; predicted peak "
            f"{self.predicted_peak_bytes / MB:.0f} MB of a {self.budget_bytes / MB:.0f} MB budget"
        )


def predict_peak(
    table: CostTable,
    checkpointed: Iterable[str],
    micro_batch: int,
    *,
    batch_size: int | None = None,
) -> float:
    """Predicted peak bytes of one training step with these segments checkpointed, the batch
    (``batch_size``, default ``micro_batch``) split into micro-batches of ``micro_batch``."""
    chosen = set(checkpointed)
    batch = micro_batch if batch_size is None else max(batch_size, micro_batch)
    accumulating = batch > micro_batch
    held = table.other_saved_bytes  # per sample, by the segments so far (forward order)
    moments = []  # (saved bytes per sample alive, working memory) at each moment
    for seg in table.segments:
        moments.append((held + seg.saved_bytes, seg.backward))  # its backward
        held += seg.kept_bytes if seg.name in chosen else seg.saved_bytes
    moments.append((held, table.forward))
    peak = max(
        micro_batch * saved + work.at(micro_batch, accumulating=accumulating)
        for saved, work in moments
    )
    return table.fixed_bytes + (batch - micro_batch) * table.batch_bytes + peak


def cheapest_first(segments: Sequence[SegmentCost]) -> list[SegmentCost]:
    """Segments that save memory, least recompute time per byte saved first."""
    useful = [s for s in segments if s.saving > 0]
    return sorted(useful, key=lambda s: s.seconds_per_byte_saved)


def plan_memory(table: CostTable, *, budget_bytes: float, batch_size: int) -> MemoryPlan:
    """The cheapest plan whose predicted peak fits `budget_bytes`; ConfigError if none does."""
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")

    def plan(names: Sequence[str], micro: int) -> MemoryPlan:
        order = [s.name for s in table.segments if s.name in names]  # forward order
        steps = math.ceil(batch_size / micro)
        peak = predict_peak(table, order, micro, batch_size=batch_size)
        return MemoryPlan(tuple(order), micro, steps, peak, budget_bytes)

    def fits(names: Sequence[str], micro: int) -> bool:
        return predict_peak(table, names, micro, batch_size=batch_size) <= budget_bytes

    def prune(names: list[str], micro: int) -> list[str]:
        """Drop segments, dearest first, whose recompute turns out not to be needed."""
        for seg in reversed(cheapest_first([table.segment(n) for n in names])):
            rest = [n for n in names if n != seg.name]
            if fits(rest, micro):
                names = rest
        return names

    chosen: list[str] = []
    if fits(chosen, batch_size):
        return plan(chosen, batch_size)
    for seg in cheapest_first(table.segments):
        chosen.append(seg.name)
        if fits(chosen, batch_size):
            return plan(prune(chosen, batch_size), batch_size)
    for micro in range(batch_size - 1, 0, -1):
        if fits(chosen, micro):
            return plan(prune(chosen, micro), micro)
    smallest = plan(chosen, 1).predicted_peak_bytes
    raise ConfigError(
        f"no plan fits a {human_bytes(budget_bytes)} budget: even one sample per micro-batch "
        f"with every segment checkpointed needs about {human_bytes(smallest)}; raise "
        f"--memory-budget to at least {human_bytes(smallest * 1.2)} or shrink --hidden-size / "
        "--lookback"
    )


def human_bytes(n: float) -> str:
    """1.5 KB, 12 MB, 3.2 GB: a budget of 1KB must not read as "0 MB"."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} bytes"
