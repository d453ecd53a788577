"""From one probing step to a :class:`~foxhunt.memory.budget.CostTable`, and a plan applied.

``measure_costs(model, batch, loss)`` runs ``loss`` (the task's forward + loss through
``model``, :func:`foxhunt.task.loss_of`) on a probe batch and on its first half, each
measurement on its own pass so no instrument disturbs another, inside a forked RNG:

1. every segment checkpointed, forward + loss under :class:`SavedTensorMeter`: bytes each
   segment still keeps (its inputs, the RNG state) and, told by the same forward, bytes each
   would save plain (``SavedReport.plain_by_owner``);
2. plain forward + loss + backward under :func:`~foxhunt.memory.moments.moment_peaks`: the
   peak of each moment (forward, each segment's backward); what it holds beyond the saved
   activations of that moment is the moment's working memory;
3. on the half batch only, the same backward again into the gradients of 2 (as a micro-batch
   after the first): what accumulating adds to each moment;
4. plain forward with timing hooks: each segment's forward seconds (its recompute price).

The fixed bytes are parameters and buffers, AdamW's two moments (2x the parameters) and, on
CUDA, what was allocated before the probe besides the model and the batch (the runtime
baseline). Per-sample numbers are the slope between the two sizes, what does not scale the
intercept: the probe may be smaller than the training batch (a micro-batch that surely fits)
and the table still predicts the full batch. Nothing here reads the step it predicts, nor knows
the trainer: ``foxhunt.training.memory`` probes its next batch and applies the plan to it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import torch
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.memory.budget import CostTable, MemoryPlan, SegmentCost, Working
from foxhunt.memory.moments import (
    FORWARD,
    LossFn,
    batch_tensors,
    moment_peaks,
    state_bytes,
    tensor_bytes,
)
from foxhunt.memory.saved import INPUTS, measure_saved
from foxhunt.model.checkpointing import (
    apply_checkpointing,
    checkpointed_segments,
    remove_checkpointing,
)
from foxhunt.model.config import SEGMENTS
from foxhunt.task import BatchLoss

ADAMW_STATE_FACTOR = 2  # exp_avg and exp_avg_sq, each the size of the parameters


def fixed_bytes(model: nn.Module, extra_bytes: float = 0.0) -> float:
    """Weights and buffers, AdamW state and ``extra_bytes`` (the runtime baseline)."""
    params = tensor_bytes([p for p in model.parameters() if p.requires_grad])
    return state_bytes(model) + params * ADAMW_STATE_FACTOR + extra_bytes


def measure_costs(
    model: nn.Module,
    batch: TFTBatch,
    loss: BatchLoss,
    *,
    runtime_bytes: float | None = None,
    repeats: int = 2,
) -> CostTable:
    """The cost table of ``model`` measured on ``batch`` and on its first half (the probe).

    Memory is an affine function of the batch size: the slope between the two sizes is the
    per-sample cost, the intercept what does not scale (block buffers, gradients).
    ``loss(batch)`` is the training step's forward + loss through ``model`` (its autocast
    included); ``runtime_bytes`` overrides the measured runtime baseline. The model's
    checkpointing, training mode and the RNG are restored afterwards.
    """
    big = batch.batch_size
    small = max(1, big // 2)
    before, was_training = checkpointed_segments(model), model.training
    names = [name for name in SEGMENTS if hasattr(model, name)]
    device = next(model.parameters()).device
    model.train()
    runtime = _runtime_bytes(model, batch) if runtime_bytes is None else runtime_bytes
    full = _head(batch, big)  # a copy: a view would count the storage it views
    half = _head(batch, small)
    try:
        with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
            hi = _probe(model, full, functools.partial(loss, full), names)
            lo_loss = functools.partial(loss, half)
            lo = hi if small == big else _probe(model, half, lo_loss, names)
            grads = [p.grad for p in model.parameters() if p.grad is not None]  # lo's
            accumulated = moment_peaks(model, lo_loss, names, [*batch_tensors(half), *grads])
            seconds = segment_seconds(model, functools.partial(loss, full), names, repeats)
    finally:
        apply_checkpointing(model, before)
        model.train(was_training)
        model.zero_grad(set_to_none=True)
    fixed = fixed_bytes(model, runtime)
    return _cost_table(hi, lo, accumulated, seconds, names, (big, small), fixed)


def _cost_table(
    hi: _Probe,
    lo: _Probe,
    accumulated: dict[str, float],
    seconds: dict[str, float],
    names: Sequence[str],
    sizes: tuple[int, int],
    fixed: float,
) -> CostTable:
    """The cost table from the probes of the full batch (``hi``) and its first half (``lo``),
    of sizes ``sizes``: the slope between them per sample, the intercept what does not scale;
    ``accumulated``: the half batch's moment peaks as a later micro-batch."""
    big, small = sizes

    def slope(a: float, b: float) -> float:
        return (a - b) / (big - small) if big > small else a / big

    # forward order: the reverse of the order backward reached the segments (static_encoders
    # runs before past_vsn); a segment whose gradients nothing needs has no moment, goes first
    reached = [moment for moment in hi.peaks if moment in names]
    order = [name for name in names if name not in reached] + reached[::-1]
    segments = [
        SegmentCost(
            name=name,
            saved_bytes=max(0.0, slope(hi.saved(name), lo.saved(name))),
            kept_bytes=max(0.0, slope(hi.kept(name), lo.kept(name))),
            forward_seconds=seconds[name] / big,
        )
        for name in order
    ]
    other = max(0.0, slope(hi.total_saved, lo.total_saved) - sum(s.saved_bytes for s in segments))
    held = other  # per sample, saved and alive at each moment of the plain probe
    alive = {}
    for seg in segments:
        alive[seg.name] = held + seg.saved_bytes
        held += seg.saved_bytes
    alive[FORWARD] = held

    def working(moment: str) -> Working:
        if moment not in hi.peaks or moment not in lo.peaks:
            return Working()  # no backward moment of its own (nothing needs its gradients)
        per_sample = slope(hi.peaks[moment], lo.peaks[moment]) - alive[moment]
        extra = accumulated.get(moment, lo.peaks[moment]) - lo.peaks[moment]
        return Working(
            fixed=hi.peaks[moment] - big * (alive[moment] + per_sample),
            per_sample=per_sample,
            accumulating=max(0.0, extra),
        )

    return CostTable(
        fixed_bytes=fixed,
        other_saved_bytes=other,
        batch_bytes=slope(hi.batch_bytes, lo.batch_bytes),
        forward=working(FORWARD),
        segments=tuple(replace(s, backward=working(s.name)) for s in segments),
    )


@dataclass(frozen=True)
class _Probe:
    plain: dict[str, int]  # bytes saved for backward by owner, nothing checkpointed
    checkpointed: dict[str, int]  # the same with every segment checkpointed
    peaks: dict[str, float]  # peak bytes of each moment beyond weights and buffers
    batch_bytes: float

    @property
    def total_saved(self) -> float:
        return float(sum(self.plain.values()))

    def saved(self, name: str) -> float:
        return float(self.plain.get(name, 0))

    def kept(self, name: str) -> float:
        return float(self.checkpointed.get(name + INPUTS, 0) + self.checkpointed.get(name, 0))


def _probe(model: nn.Module, batch: TFTBatch, loss_fn: LossFn, names: Sequence[str]) -> _Probe:
    apply_checkpointing(model, names)
    saved = measure_saved(model, loss_fn)
    plain, kept = saved.plain_by_owner, saved.by_owner
    remove_checkpointing(model)
    model.zero_grad(set_to_none=True)
    tensors = batch_tensors(batch)
    peaks = moment_peaks(model, loss_fn, names, tensors)
    return _Probe(plain, kept, peaks, float(tensor_bytes(tensors)))


def _head(batch: TFTBatch, n: int) -> TFTBatch:
    """The first ``n`` samples, copied: a view would keep (and count) the whole storage."""
    part = batch.slice(0, n)
    copies = {
        f.name: v.clone() for f in fields(part) if isinstance(v := getattr(part, f.name), Tensor)
    }
    return replace(part, **copies)


def segment_seconds(
    model: nn.Module, loss_fn: LossFn, names: Sequence[str], repeats: int
) -> dict[str, float]:
    """Fastest of ``repeats`` forward times of each segment, in training mode with grad."""
    best = dict.fromkeys(names, float("inf"))
    started: dict[str, float] = {}
    device = next(model.parameters()).device
    handles = []
    for name in names:
        module = getattr(model, name)

        def pre(module: nn.Module, args: Any, name: str = name) -> None:
            _sync(device)
            started[name] = time.perf_counter()

        def post(module: nn.Module, args: Any, out: Any, name: str = name) -> None:
            _sync(device)
            best[name] = min(best[name], time.perf_counter() - started[name])

        handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    try:
        for _ in range(max(1, repeats)):
            loss_fn()  # the graph is dropped at once, nothing runs backward
    finally:
        for handle in handles:
            handle.remove()
    return best


def _runtime_bytes(model: nn.Module, batch: TFTBatch) -> float:
    """CUDA bytes allocated outside the model and the batch (other tensors, the runtime's
    own); 0 on CPU, where the peak tracker counts tensors only."""
    device = next(model.parameters()).device
    if device.type != "cuda":
        return 0.0
    held = state_bytes(model) + tensor_bytes(batch_tensors(batch))
    return float(max(0, torch.cuda.memory_allocated(device) - held))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def apply_plan(model: nn.Module, plan: MemoryPlan) -> int | None:
    """Checkpoint the plan's segments; return the micro-batch size the step must use (None:
    the whole batch at once). The caller hands it to the trainer."""
    apply_checkpointing(model, plan.checkpointing)
    return plan.micro_batch_size if plan.accumulation_steps > 1 else None
