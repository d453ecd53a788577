"""What checkpointing saves on this run's first training forward: measured, logged, recorded.

``watch_first_forward(model, sink)`` hooks the model's next forward in training mode with
gradients (the first training step's, or its first micro-batch's) and measures it with the
saved-bytes meter while it runs: no forward of its own, so no start-up time, no random
draws and no QAT observer moves. One checkpointed forward tells both numbers: what it saves
(its kept inputs included) and what the plain forward would have saved (``SavedReport.plain``,
from the tensors checkpoint drops; ``memory/saved.py``). The model's forward only: the loss
after it saves a few more bytes. Nothing is recorded when no segment is checkpointed then.
``foxhunt.training.memory`` points it at the trainer's model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from foxhunt.memory.saved import MiB, SavedReport, SavedTensorMeter
from foxhunt.model.checkpointing import checkpointed_segments
from foxhunt.model.config import SEGMENTS

log = logging.getLogger("foxhunt.memory")

Record = dict[str, Any]


def watch_first_forward(model: nn.Module, sink: Callable[[Record], None]) -> Callable[[], None]:
    """Measure ``model``'s next training forward if it is checkpointed then: log one line and
    hand ``sink`` a ``"checkpointing"`` history record. Returns what removes the watch."""
    meter: list[SavedTensorMeter] = []
    segments: list[str] = []
    handles: list[Any] = []

    def remove() -> None:
        for handle in handles:
            handle.remove()

    def before(module: nn.Module, args: tuple[Any, ...]) -> None:
        if not (module.training and torch.is_grad_enabled()):
            return  # an evaluation or a no-grad pass: not the training forward
        segments.extend(checkpointed_segments(module))
        if not segments:
            remove()
            return
        meter.append(SavedTensorMeter(module).__enter__())

    def after(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        if not meter:
            return
        report = meter[0].report()  # while ``output`` keeps the graph alive
        meter[0].__exit__(None, None, None)
        remove()
        if output is None:  # the forward raised (always_call): nothing to report
            return
        batch_size = getattr(args[0], "batch_size", None) if args else None
        sink(_record(report, segments, batch_size))

    handles.append(model.register_forward_pre_hook(before))
    handles.append(model.register_forward_hook(after, always_call=True))
    return remove


def _record(report: SavedReport, segments: list[str], batch_size: int | None) -> Record:
    which = "all segments" if segments == list(SEGMENTS) else ", ".join(segments)
    log.info(
        "activation checkpointing of %s: %.1f MiB saved for backward by the first training "
        "forward instead of %.1f MiB plain (%.0f%% less; %.1f MiB of it inputs kept for "
        "recompute)",
        which,
        report.total / MiB,
        report.plain / MiB,
        100 * (1 - report.total / report.plain) if report.plain else 0.0,
        report.checkpoint_inputs / MiB,
    )
    return {
        "event": "checkpointing",
        "segments": segments,
        "batch_size": batch_size,
        "saved_bytes_checkpointed": report.total,
        "kept_input_bytes": report.checkpoint_inputs,
        "saved_bytes_plain": report.plain,
    }
