"""Bytes saved for backward: what the autograd graph keeps alive between forward and backward.

:class:`SavedTensorMeter` installs ``torch.autograd.graph.saved_tensors_hooks`` for one forward
pass. Every tensor autograd saves goes through its pack hook; the meter records the tensor's
storage (so views of one buffer count once) and who was running when it was saved. Parameters
and buffers are model state, alive with or without a graph, and are left out.

Non-reentrant activation checkpointing (``torch.utils.checkpoint``, ``use_reentrant=False``)
replaces what a segment saves with empty holders, but it keeps the segment's *inputs* for the
recomputation: top-level tensor arguments as ``SavedTensor``s (they go through the same pack
hook), everything else (tensors in tuples, keyword arguments) by plain reference in a closure,
which no hook sees. :mod:`foxhunt.model.checkpointing` therefore reports every tensor it
hands to ``checkpoint`` (and the RNG state it stashes) to its ``LISTENERS``, where an
active meter listens, and the meter counts them as well: the saving it reports is net of what
checkpointing itself holds.

The same transform also tells the meter each tensor a checkpointed segment's forward saves and
checkpoint drops, with the holder checkpoint keeps in its place (alive exactly as long as the
graph node that saved it). So one checkpointed forward also gives ``SavedReport.plain``: the
bytes the forward would have saved with nothing checkpointed (the distinct storages whose
saving node is still alive, checkpoint's kept inputs and RNG state left out), measured, not
estimated, and without holding any of them: no second, plain forward is needed.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.weak import WeakIdKeyDictionary

from foxhunt.model.checkpointing import LISTENERS

MiB = 1 << 20
TOP_LEVEL = "(top level)"  # saved by the model's own forward, outside any named child
INPUTS = " (inputs kept)"  # suffix: tensors a checkpointed segment keeps for its recompute

_active: list[SavedTensorMeter] = []  # meters in use, innermost last


@dataclass(frozen=True)
class SavedReport:
    """Distinct storages saved for backward and still alive, in bytes, by owner."""

    total: int
    by_owner: dict[str, int] = field(default_factory=dict)
    plain_by_owner: dict[str, int] = field(default_factory=dict)  # nothing checkpointed

    @property
    def plain(self) -> int:
        """What the same forward saves with nothing checkpointed (module doc)."""
        return sum(self.plain_by_owner.values())

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
        self._plain = WeakIdKeyDictionary()  # storage -> _Saved, what a plain forward keeps
        self._plain_seen: list[_Saved] = []  # also those whose storage checkpoint dropped
        self._saving_inputs = False  # between checkpoint's kept inputs and its forward
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
        LISTENERS.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _active.remove(self)
        LISTENERS.remove(self)
        assert self._hooks is not None
        self._hooks.close()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def report(self) -> SavedReport:
        by_owner: dict[str, int] = dict(self._extra)
        for storage, owner in self._storages.items():
            by_owner[owner] = by_owner.get(owner, 0) + storage.nbytes()
        plain: dict[str, int] = {}
        for saved in self._plain_seen:
            if saved.alive():
                plain[saved.owner] = plain.get(saved.owner, 0) + saved.nbytes
        return SavedReport(total=sum(by_owner.values()), by_owner=by_owner, plain_by_owner=plain)

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

    def record_plain(self, tensor: Tensor, holder: object) -> None:
        """A plain forward would keep ``tensor``'s storage as long as ``holder`` lives."""
        if tensor.layout != torch.strided or tensor.device.type == "meta":
            return
        storage = tensor.untyped_storage()
        if id(storage) in self._excluded:
            return
        saved = self._plain.get(storage)
        if saved is None:
            owner = self._owner[-1] if self._owner else TOP_LEVEL
            saved = self._plain[storage] = _Saved(storage.nbytes(), owner)
            self._plain_seen.append(saved)
        saved.holders.append(weakref.ref(holder))

    # --- the checkpointing transform's listener (model/checkpointing.py) ---------------------
    def kept(self, segment: str, tensors: list[Tensor], rng_bytes: int) -> None:
        """What a checkpointed segment keeps for its recomputation (its inputs, RNG state)."""
        for t in tensors:
            self.record(t, segment + INPUTS)
        if rng_bytes:
            self.record_bytes(segment + INPUTS, rng_bytes)
        self._saving_inputs = True  # checkpoint's next packs: these inputs, not the plain's

    def dropped(self, segment: str, tensor: Tensor, holder: object) -> None:
        self._saving_inputs = False  # the segment's forward has begun
        self.record_plain(tensor, holder)

    def _pack(self, tensor: Tensor) -> Tensor:
        packed = tensor.detach()  # the same storage; not ``tensor``: that would be a ref cycle
        for meter in _active:  # only the innermost hooks run: tell the enclosing meters too
            meter.record(tensor)
            if not meter._saving_inputs:
                meter.record_plain(tensor, packed)
        return packed

    def _enter_child(self, name: str) -> Any:
        def hook(module: nn.Module, args: Any) -> None:
            self._owner.append(name)

        return hook

    def _leave_child(self, module: nn.Module, args: Any, output: Any) -> None:
        self._saving_inputs = False  # a segment that saved nothing
        if self._owner:
            self._owner.pop()


class _Saved:
    """One storage a plain forward would keep: its bytes and what keeps it (weak references
    to the saved tensors, or to checkpoint's holders standing in for them)."""

    def __init__(self, nbytes: int, owner: str) -> None:
        self.nbytes = nbytes
        self.owner = owner
        self.holders: list[weakref.ref[Any]] = []

    def alive(self) -> bool:
        return any(ref() is not None for ref in self.holders)


def _unpack(tensor: Tensor) -> Tensor:
    return tensor


def measure_saved(model: nn.Module, loss_fn: Callable[[], Tensor]) -> SavedReport:
    """Bytes saved for backward by one forward + loss; the graph is dropped, not run."""
    with SavedTensorMeter(model) as meter:
        loss = loss_fn()
    report = meter.report()  # while ``loss`` keeps the graph alive
    del loss
    return report
