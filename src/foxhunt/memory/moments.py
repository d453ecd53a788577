"""Peak memory of each moment of a training step: the forward, and each segment's backward.

A step peaks at one of a few moments. Late in forward (or early in backward, before the first
segment's gradients) everything saved for backward is alive. While backward runs through a
segment (after recomputing it, if it is checkpointed), the segments before it still hold what
they saved, its own activations are there, and its backward needs working memory of its own:
block buffers (the fused variable GRNs'), the gradients of its inputs and its weights' new
gradients, next to the gradients of the segments already done. That working memory does not
scale like the saved activations (part of it not at all), so the planner needs it per moment.

:func:`moment_peaks` measures every moment's peak in one forward + loss + backward. A
segment's backward moment starts when the gradient of one of its outputs is ready (a tensor
hook) and lasts until the next segment's starts; everything before the first is the forward
moment. CPU: live tensor storages (:class:`~foxhunt.memory.peak.LiveStorageTracker`); CUDA: the
allocator's peak, read and reset where a moment starts.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils._pytree import tree_flatten

from foxhunt.batch import TFTBatch
from foxhunt.memory.peak import LiveStorageTracker

FORWARD = "forward"  # the moment name of forward + loss (+ backward up to the first segment)

LossFn = Callable[[], Tensor]


def tensor_bytes(tensors: Sequence[Tensor]) -> int:
    """Bytes of distinct storages among ``tensors``."""
    seen = {id(t.untyped_storage()): t.untyped_storage().nbytes() for t in tensors}
    return sum(seen.values())


def batch_tensors(batch: TFTBatch) -> list[Tensor]:
    """The tensors of ``batch`` a step keeps alive (anchors excluded)."""
    fields = (
        batch.static,
        batch.past,
        batch.future,
        batch.target,
        batch.static_categorical,
        batch.scale,
    )
    return [t for t in fields if t is not None]


def state_bytes(model: nn.Module) -> int:
    return tensor_bytes([*model.parameters(), *model.buffers()])


def moment_peaks(
    model: nn.Module, loss_fn: LossFn, segments: Sequence[str], tracked: Sequence[Tensor] = ()
) -> dict[str, float]:
    """Peak bytes beyond the model's weights and buffers of each moment of
    ``loss_fn().backward()``: :data:`FORWARD` first, then each segment whose backward ran, in
    the order backward reached them. ``tracked``: tensors that exist before and count as live
    (the batch; gradients of an earlier backward, which this one then accumulates into, as a
    micro-batch after the first does)."""
    device = next(model.parameters()).device
    gc.collect()
    meter: _CpuMoments | _CudaMoments
    if device.type == "cuda":
        meter = _CudaMoments(device, tensor_bytes(tracked))
    else:
        meter = _CpuMoments(state_bytes(model))
        meter.track(*model.parameters(), *model.buffers(), *tracked)
    handles = [
        getattr(model, name).register_forward_hook(_backward_starts(meter, name))
        for name in segments
    ]
    try:
        with meter:
            loss_fn().backward()
    finally:
        for handle in handles:
            handle.remove()
    return meter.peaks


def _backward_starts(meter: _CpuMoments | _CudaMoments, name: str) -> Callable[..., None]:
    """A forward hook that starts ``name``'s backward moment when an output's gradient is ready."""

    def hook(module: nn.Module, args: Any, output: Any) -> None:
        for t in tree_flatten(output)[0]:
            if isinstance(t, Tensor) and t.requires_grad:
                t.register_hook(lambda grad: meter.enter(name))

    return hook


class _CpuMoments(LiveStorageTracker):
    def __init__(self, state: int) -> None:
        super().__init__()
        self.moment = FORWARD
        self.peaks: dict[str, float] = {}
        self._state = state

    def enter(self, moment: str) -> None:
        self.moment = moment
        self._note()

    def _add(self, t: Tensor) -> None:
        super()._add(t)
        self._note()

    def _note(self) -> None:
        above = float(self.live - self._state)
        self.peaks[self.moment] = max(self.peaks.get(self.moment, above), above)


class _CudaMoments:
    """Allocator peaks per moment, beyond what was allocated before except ``tracked``."""

    def __init__(self, device: torch.device, tracked: int) -> None:
        self.device = device
        self.moment = FORWARD
        self.peaks: dict[str, float] = {}
        self._tracked = tracked
        self._offset = 0

    def __enter__(self) -> _CudaMoments:
        torch.cuda.synchronize(self.device)
        self._offset = self._tracked - torch.cuda.memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        torch.cuda.synchronize(self.device)
        self.enter(self.moment)

    def enter(self, moment: str) -> None:
        """Close the moment so far (the allocator counts at allocation: no sync needed)."""
        peak = float(torch.cuda.max_memory_allocated(self.device) + self._offset)
        self.peaks[self.moment] = max(self.peaks.get(self.moment, peak), peak)
        torch.cuda.reset_peak_memory_stats(self.device)
        self.moment = moment
