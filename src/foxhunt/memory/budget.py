"""The memory budget planner: from measured per-sample costs to the cheapest plan that fits.

Order of preference (cheapest first):
1. no checkpointing, the whole batch at once;
2. checkpoint the segments whose recomputation costs least per byte it saves, adding them one
   at a time until the predicted peak fits, then dropping those that turn out not to be needed;
3. every useful segment checkpointed and the batch split into micro-batches with gradient
   accumulation: the effective batch size, and so the gradients, stay those of the full batch.

The peak model: fixed bytes (weights, gradients, optimizer state, runtime) plus, per sample of
the micro-batch, transient working memory and the larger of
- what is saved at the end of forward: plain segments keep their activations, checkpointed ones
  only their inputs; and
- for each checkpointed segment, the moment backward recomputes it: its activations are back,
  the segments before it still hold what they saved, the ones after it are already freed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from foxhunt.errors import ConfigError

MB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class SegmentCost:
    """What one checkpointable segment costs, per sample of the batch."""

    name: str
    saved_bytes: float  # saved for backward when not checkpointed
    kept_bytes: float  # still held when checkpointed (its inputs, RNG state)
    forward_seconds: float  # one more forward: the price of recomputing it

    @property
    def saving(self) -> float:
        return self.saved_bytes - self.kept_bytes

    @property
    def seconds_per_byte_saved(self) -> float:
        return self.forward_seconds / self.saving if self.saving > 0 else math.inf


@dataclass(frozen=True, kw_only=True)
class CostTable:
    """Measured costs of one model and configuration."""

    fixed_bytes: float  # independent of the batch: weights, gradients, optimizer state, runtime
    other_saved_bytes: float  # per sample, saved outside the segments (glue layers, loss, batch)
    transient_bytes: float  # per sample, working memory on top of what is saved
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


def predict_peak(table: CostTable, checkpointed: Iterable[str], micro_batch: int) -> float:
    """Predicted peak bytes of one training step with these segments checkpointed."""
    chosen = set(checkpointed)
    held = table.other_saved_bytes  # per sample, by the segments so far (forward order)
    worst = 0.0
    for seg in table.segments:
        if seg.name in chosen:
            worst = max(worst, held + seg.saved_bytes)  # backward recomputes this segment
            held += seg.kept_bytes
        else:
            held += seg.saved_bytes
    per_sample = max(held, worst) + table.transient_bytes
    return table.fixed_bytes + micro_batch * per_sample


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
        peak = predict_peak(table, order, micro)
        return MemoryPlan(tuple(order), micro, steps, peak, budget_bytes)

    def fits(names: Sequence[str], micro: int) -> bool:
        return predict_peak(table, names, micro) <= budget_bytes

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
        f"no plan fits a {budget_bytes / MB:.0f} MB budget: even one sample per micro-batch with "
        f"every segment checkpointed needs about {smallest / MB:.0f} MB; raise --memory-budget "
        "or shrink --hidden-size / --lookback"
    )
