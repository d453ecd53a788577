"""Peak memory of a block of work: CUDA allocator statistics, or live tensor storages on CPU.

The CPU has no allocator statistics that separate tensors from everything else in the
process, so :class:`LiveStorageTracker` counts tensor memory itself: a ``TorchDispatchMode``
that sees every tensor each aten op returns (forward, backward and recomputation alike), keeps
a weak reference to its storage and adds the storage's bytes while it is alive. Tensors that
exist before the block (parameters, gradients, the batch) are registered with :meth:`track`.
It is the accounting of ``torch.distributed._tools.mem_tracker.MemTracker``, without its
per-module bookkeeping (about 4x slower again); a test checks the two agree.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class LiveStorageTracker(TorchDispatchMode):
    """Bytes of live tensor storages (``live``) and their maximum (``peak``) inside the block.

    tracker = LiveStorageTracker()
    tracker.track(*model.parameters(), *batch_tensors)
    with tracker:
        loss_fn(model(batch)).backward()
    print(tracker.peak)
    """

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self.peak_at = ""  # the op that reached the peak, and in which pass
        self._refs: dict[int, tuple[weakref.ref[Any], int]] = {}  # id(storage) -> (ref, bytes)

    def track(self, *tensors: Tensor | None) -> None:
        """Count tensors that already exist (parameters, gradients, inputs) as live."""
        for t in tensors:
            if t is not None:
                self._add(t)

    def __torch_dispatch__(
        self,
        func: Callable[..., Any],
        types: Iterable[type],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        before = self.peak
        for t in tree_flatten(out)[0]:
            if isinstance(t, Tensor):
                self._add(t)
        if self.peak > before:
            backward = torch._C._current_graph_task_id() != -1
            self.peak_at = f"{func} ({'backward' if backward else 'forward'})"
        return out

    def _add(self, t: Tensor) -> None:
        if t.layout != torch.strided or t.device.type == "meta":
            return
        storage = t.untyped_storage()
        key = id(storage)
        known = self._refs.get(key)
        if known is not None and known[0]() is storage:
            if known[1] == storage.nbytes():
                return
            self.live -= known[1]  # resized in place
        nbytes = storage.nbytes()
        self._refs[key] = (weakref.ref(storage, self._freed(key, nbytes)), nbytes)
        self.live += nbytes
        self.peak = max(self.peak, self.live)

    def _freed(self, key: int, nbytes: int) -> Callable[[Any], None]:
        def callback(ref: weakref.ref[Any]) -> None:
            entry = self._refs.get(key)
            if entry is not None and entry[0] is ref:
                del self._refs[key]
                self.live -= entry[1]

        return callback


def cuda_peak(device: torch.device) -> int:
    """Peak bytes the CUDA caching allocator handed out since the last reset."""
    return int(torch.cuda.max_memory_allocated(device))
