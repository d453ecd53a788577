"""Bytes saved for backward: what the autograd graph keeps alive between forward and backward.

:class:`SavedTensorMeter` installs ``torch.autograd.graph.saved_tensors_hooks`` for one forward
pass. Every tensor autograd saves goes through its pack hook; the meter records the tensor's
storage (so views of one buffer count once) and who was running when it was saved. Parameters
and buffers are model state, alive with or without a graph, and are left out.

Non-reentrant activation checkpointing (``torch.utils.checkpoint``, ``use_reentrant=False``)
replaces what a segment saves with empty holders, but it keeps the segment's *inputs* for the
recomputation: top-level tensor arguments as ``SavedTensor``s (they go through the same pack
hook), everything else (tensors in tuples, keyword arguments) by plain reference in a closure,
which no hook sees. :mod:`foxhunt.transforms.checkpointing` therefore reports every tensor it
hands to ``checkpoint`` (and the RNG state it stashes) to its ``INPUT_LISTENERS``, where an
active meter listens, and the meter counts them as well: the saving it reports is net of what
checkpointing itself holds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.weak import WeakIdKeyDictionary

from foxhunt.transforms.checkpointing import INPUT_LISTENERS

MiB = 1 << 20
TOP_LEVEL = "(top level)"  # saved by the model's own forward, outside any named child
INPUTS = " (inputs kept)"  # suffix: tensors a checkpointed segment keeps for its recompute

_active: list[SavedTensorMeter] = []  # meters in use, innermost last


@dataclass(frozen=True)
class SavedReport:
    """Distinct storages saved for backward and still alive, in bytes, by owner."""

    total: int
    by_owner: dict[str, int] = field(default_factory=dict)

    @property
    def checkpoint_inputs(self) -> int:
        """Bytes kept by checkpointed segments for their recomputation (inputs, RNG state)."""
        return sum(b for owner, b in self.by_owner.items() if owner.endswith(INPUTS))


class SavedTensorMeter:
    """Count the bytes autograd saves for backward while the context is active.

    ``model`` (optional) names its parameters and buffers, which are excluded, and attributes
    each saved storage to the top-level child running when it was saved (e.g. ``past_vsn``).
    Read :meth:`report` while the graph is alive (before ``backward``): it sums the recorded
    storages that are still alive, each once.

        with SavedTensorMeter(model) as meter:
            loss = loss_fn(model(batch))
        print(meter.report().total)
        loss.backward()
    """

    def __init__(self, model: nn.Module | None = None, exclude: Iterable[Tensor] = ()) -> None:
        state = list(exclude)
        if model is not None:
            state += [*model.parameters(), *model.buffers()]
        self._excluded = {id(t.untyped_storage()) for t in state}
        self._keep_excluded = [t.untyped_storage() for t in state]  # ids stay unique while alive
        self._storages = WeakIdKeyDictionary()  # storage -> owner, first seen wins
        self._extra: dict[str, int] = {}  # bytes held without a tensor storage (RNG states)
        self._owner: list[str] = []
        self._model = model
        self._handles: list[Any] = []
        self._hooks: contextlib.ExitStack | None = None

    def __enter__(self) -> SavedTensorMeter:
        if self._model is not None:
            for name, child in self._model.named_children():
                self._handles.append(child.register_forward_pre_hook(self._enter_child(name)))
                self._handles.append(
                    child.register_forward_hook(self._leave_child, always_call=True)
                )
        self._hooks = contextlib.ExitStack()
        self._hooks.enter_context(torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack))
        _active.append(self)
        INPUT_LISTENERS.append(self._note_checkpoint_inputs)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove(self)
        INPUT_LISTENERS.remove(self._note_checkpoint_inputs)
        assert self._hooks is not None
        self._hooks.close()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def report(self) -> SavedReport:
        by_owner: dict[str, int] = dict(self._extra)
        for storage, owner in self._storages.items():
            by_owner[owner] = by_owner.get(owner, 0) + storage.nbytes()
        return SavedReport(total=sum(by_owner.values()), by_owner=by_owner)

    # --- recording -------------------------------------------------------------------------
    def record(self, tensor: Tensor, owner: str | None = None) -> None:
        """Count ``tensor``'s storage once, unless it is model state or has no data."""
        if tensor.layout != torch.strided or tensor.device.type == "meta":
            return
        storage = tensor.untyped_storage()
        if id(storage) in self._excluded or storage in self._storages:
            return
        self._storages[storage] = owner or (self._owner[-1] if self._owner else TOP_LEVEL)

    def record_bytes(self, owner: str, nbytes: int) -> None:
        self._extra[owner] = self._extra.get(owner, 0) + nbytes

    def _note_checkpoint_inputs(self, segment: str, tensors: list[Tensor], rng_bytes: int) -> None:
        """What a checkpointed segment keeps for its recomputation (its inputs, RNG state)."""
        for t in tensors:
            self.record(t, segment + INPUTS)
        if rng_bytes:
            self.record_bytes(segment + INPUTS, rng_bytes)

    def _pack(self, tensor: Tensor) -> Tensor:
        for meter in _active:  # only the innermost hooks run: tell the enclosing meters too
            meter.record(tensor)
        return tensor.detach()  # the same storage; not ``tensor``: that would be a ref cycle

    def _enter_child(self, name: str) -> Any:
        def hook(module: nn.Module, args: Any) -> None:
            self._owner.append(name)

        return hook

    def _leave_child(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._owner:
            self._owner.pop()


def _unpack(tensor: Tensor) -> Tensor:
    return tensor


def measure_saved(model: nn.Module, loss_fn: Callable[[], Tensor]) -> SavedReport:
    """Bytes saved for backward by one forward + loss; the graph is dropped, not run."""
    with SavedTensorMeter(model) as meter:
        loss = loss_fn()
    report = meter.report()  # while ``loss`` keeps the graph alive
    del loss
    return report
