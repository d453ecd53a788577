"""What checkpointing saves on this run's first training batch: measured, logged at startup.

``foxhunt.training.memory`` hands in the trainer's model, its next batch and the task's loss.
"""

from __future__ import annotations

import functools
import gc
import logging
from typing import Any

import torch
from torch import nn

from foxhunt.batch import TFTBatch
from foxhunt.memory.saved import MiB, SavedReport, measure_saved
from foxhunt.model.config import SEGMENTS
from foxhunt.task import BatchLoss
from foxhunt.transforms.checkpointing import apply_checkpointing, remove_checkpointing

log = logging.getLogger("foxhunt.memory")


def report_checkpointing(
    model: nn.Module, batch: TFTBatch, loss: BatchLoss, segments: list[str]
) -> dict[str, Any]:
    """Bytes saved for backward by one forward of ``batch``, checkpointed and plain.

    ``loss(batch)`` runs ``model`` in training mode (with the training autocast), inside a
    forked RNG: training draws the same dropout masks as if nothing had been measured. The
    plain forward may not fit on the device (that is why checkpointing is on): an
    out-of-memory there is reported, not raised. Logs one line and returns a history record.
    """
    loss_fn = functools.partial(loss, batch)
    device = next(model.parameters()).device
    was_training = model.training
    devices = [device.index or 0] if device.type == "cuda" else []
    model.train()
    try:
        with torch.random.fork_rng(devices=devices):
            checkpointed = measure_saved(model, loss_fn)
            remove_checkpointing(model)
            plain = _try_measure(model, loss_fn, device)
    finally:
        apply_checkpointing(model, segments)
        model.train(was_training)
    record = {
        "event": "checkpointing",
        "segments": segments,
        "batch_size": batch.batch_size,
        "saved_bytes_checkpointed": checkpointed.total,
        "kept_input_bytes": checkpointed.checkpoint_inputs,
        "saved_bytes_plain": None if plain is None else plain.total,
    }
    which = "all segments" if segments == list(SEGMENTS) else ", ".join(segments)
    if plain is None:
        log.info(
            "activation checkpointing of %s: %.1f MiB saved for backward on the first batch "
            "(%.1f MiB of it inputs kept for recompute); the plain forward ran out of memory",
            which,
            checkpointed.total / MiB,
            checkpointed.checkpoint_inputs / MiB,
        )
    else:
        log.info(
            "activation checkpointing of %s: %.1f MiB saved for backward on the first batch "
            "instead of %.1f MiB plain (%.0f%% less; %.1f MiB of it inputs kept for recompute)",
            which,
            checkpointed.total / MiB,
            plain.total / MiB,
            100 * (1 - checkpointed.total / plain.total) if plain.total else 0.0,
            checkpointed.checkpoint_inputs / MiB,
        )
    return record


def _try_measure(model: Any, loss_fn: Any, device: torch.device) -> SavedReport | None:
    try:
        return measure_saved(model, loss_fn)
    except torch.cuda.OutOfMemoryError:
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        return None
