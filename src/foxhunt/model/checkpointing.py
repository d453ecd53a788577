"""Activation checkpointing of the TFT's segments: one transform, wrapping segments from outside.

``apply_checkpointing(model, policy)`` is the one place that decides what is checkpointed. It
lives beside the model because the model's one switch, ``TFTConfig.checkpointing``, must hold
through every door: ``TemporalFusionTransformer(config)`` applies it as its last step of
construction (so does ``build_model``, which calls the constructor), and no block's
``forward`` knows about it. ``foxhunt.transforms`` re-exports it with the other transforms;
the planner and the benchmarks change the policy of a built model later. A checkpointed
segment keeps its weights and its ``state_dict`` keys: only the instance's ``forward`` is
replaced by a callable that runs the original forward under
``torch.utils.checkpoint.checkpoint(..., use_reentrant=False, preserve_rng_state=True)``.
The segment's intermediate activations are then dropped after forward and recomputed in
backward (with the same dropout masks: the RNG state is restored), at the price of one more
forward of the segment. In eval mode or under ``torch.no_grad`` there is nothing to save, so
the plain forward runs.

What checkpointing still holds: the segment's inputs (needed to recompute) and a copy of the
RNG state. Every input tensor, also those nested in tuples (the LSTM state) or passed by
keyword, is handed to ``checkpoint`` as a top-level argument, so torch keeps each of them as
a ``SavedTensor`` (version-checked against in-place changes). Every listener in ``LISTENERS``
(the saved-bytes meter of ``foxhunt.memory.saved``) is told about them, and about each tensor
the segment's forward saves and checkpoint drops (with the holder that stands in for it): so
one checkpointed forward tells what it keeps and what the plain forward would have kept.

Note on hooks: forward (pre-)hooks registered on a checkpointed segment fire once per call, as
before; the recomputation calls the original forward directly, so only hooks of the modules
inside the segment fire again in backward.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import torch
from torch import Tensor, nn
from torch.utils._pytree import tree_flatten, tree_unflatten
from torch.utils.checkpoint import checkpoint, get_device_states

from foxhunt.errors import ConfigError
from foxhunt.model.config import SEGMENTS

Policy = str | Sequence[str]


class CheckpointListener(Protocol):
    """Told what a checkpointed segment keeps and drops, each time it runs checkpointed."""

    def kept(self, segment: str, tensors: list[Tensor], rng_bytes: int) -> None:
        """``checkpoint`` is about to keep ``tensors`` (and RNG states) for the recompute."""

    def dropped(self, segment: str, tensor: Tensor, holder: object) -> None:
        """The segment's forward saved ``tensor`` for backward; checkpoint keeps ``holder``
        (alive as long as the graph needs it) instead and recomputes the tensor."""


#: The memory meters register here, so this transform imports nothing of them.
LISTENERS: list[CheckpointListener] = []


def resolve_policy(policy: Policy) -> tuple[str, ...]:
    """``"none"`` -> (), ``"full"`` -> every segment, names -> those names in ``SEGMENTS`` (build) order."""
    if isinstance(policy, str):
        if policy == "none":
            return ()
        if policy == "full":
            return SEGMENTS
        raise ConfigError(
            f'checkpointing policy {policy!r}: use "none", "full" or a tuple of segment names '
            f"from {SEGMENTS}"
        )
    names = tuple(policy)
    unknown = [name for name in names if name not in SEGMENTS]
    if unknown:
        raise ConfigError(
            f"checkpointing policy {names}: unknown segments {unknown}; valid names are {SEGMENTS}"
        )
    return tuple(name for name in SEGMENTS if name in names)


def apply_checkpointing(
    model: nn.Module, policy: Policy, *, preserve_rng_state: bool = True
) -> list[str]:
    """Checkpoint exactly the segments ``policy`` names; return their names in ``SEGMENTS`` (build) order.

    Idempotent: any earlier checkpointing is removed first, so applying a policy twice, or
    ``"full"`` then ``("past_vsn",)``, leaves exactly the last policy in place.
    ``preserve_rng_state=False`` exists for tests that show why it must stay True.
    """
    segments = resolve_policy(policy)
    modules = [_segment(model, name) for name in segments]  # fail before changing anything
    remove_checkpointing(model)
    for name, module in zip(segments, modules, strict=True):
        module.forward = CheckpointedForward(module, name, preserve_rng_state)
    return list(segments)


def remove_checkpointing(model: nn.Module) -> list[str]:
    """Restore every checkpointed segment's own forward; return the names that were wrapped."""
    removed = []
    for name, module in model.named_children():
        wrapper = module.__dict__.get("forward")
        if isinstance(wrapper, CheckpointedForward):
            if wrapper.original is None:
                del module.forward
            else:
                module.forward = wrapper.original
            removed.append(name)
    return removed


def checkpointed_segments(model: nn.Module) -> list[str]:
    """Names of the segments of ``model`` that are checkpointed now, in ``SEGMENTS`` (build) order."""
    return [
        name
        for name, module in model.named_children()
        if isinstance(module.__dict__.get("forward"), CheckpointedForward)
    ]


class CheckpointedForward:
    """Stands in for one segment's ``forward``; calls the original under checkpoint."""

    def __init__(self, module: nn.Module, name: str, preserve_rng_state: bool) -> None:
        self.module = module
        self.name = name
        self.preserve_rng_state = preserve_rng_state
        # an instance-level forward (another transform's) is kept and restored; else the class's
        self.original: Any = module.__dict__.get("forward")

    def run(self, *args: Any, **kwargs: Any) -> Any:
        if self.original is not None:
            return self.original(*args, **kwargs)
        return type(self.module).forward(self.module, *args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (self.module.training and torch.is_grad_enabled()):
            return self.run(*args, **kwargs)  # nothing would be saved: no recompute either
        leaves, spec = tree_flatten((args, kwargs))
        options: dict[str, Any] = {}
        if LISTENERS:
            tensors = [t for t in leaves if isinstance(t, Tensor)]
            rng_bytes = self._rng_state_bytes(tensors)
            for listener in LISTENERS:
                listener.kept(self.name, tensors, rng_bytes)
            options["context_fn"] = lambda: (_report_dropped(self.name), contextlib.nullcontext())

        def segment(*flat: Any) -> Any:
            inner_args, inner_kwargs = tree_unflatten(list(flat), spec)
            return self.run(*inner_args, **inner_kwargs)

        return checkpoint(
            segment,
            *leaves,
            use_reentrant=False,
            preserve_rng_state=self.preserve_rng_state,
            **options,
        )

    def _rng_state_bytes(self, tensors: list[Tensor]) -> int:
        """Bytes of the RNG states checkpoint stashes for the recompute (CPU + devices used)."""
        if not self.preserve_rng_state:
            return 0
        _, device_states = get_device_states(*tensors)
        return torch.get_rng_state().nbytes + sum(s.nbytes for s in device_states)

    def __repr__(self) -> str:
        return f"CheckpointedForward({self.name})"


@contextlib.contextmanager
def _report_dropped(name: str) -> Iterator[None]:
    """Around the checkpointed forward (inside checkpoint's own saved-tensor hooks, which drop
    what is saved): tell the listeners each saved tensor, then hand it to checkpoint's hook.
    Only while a listener (a meter) is registered; the recompute runs without it."""
    outer = torch._C._autograd._top_saved_tensors_default_hooks(False)
    if outer is None:  # not under checkpoint's hooks (cannot happen in eager): count nothing
        yield
        return
    outer_pack, outer_unpack = outer

    def pack(tensor: Tensor) -> Any:
        holder = outer_pack(tensor)
        for listener in LISTENERS:
            listener.dropped(name, tensor, holder)
        return holder

    with torch.autograd.graph.saved_tensors_hooks(pack, outer_unpack):
        yield


def _segment(model: nn.Module, name: str) -> nn.Module:
    module = getattr(model, name, None)
    if not isinstance(module, nn.Module):
        raise ConfigError(
            f"cannot checkpoint segment {name!r}: {type(model).__name__} has no child module "
            f"of that name (expected a TemporalFusionTransformer with {SEGMENTS})"
        )
    return module
