"""The one function that applies a model's transforms where a model is built."""

from __future__ import annotations

from typing import TypeVar

from torch import nn

from foxhunt.model.config import TFTConfig
from foxhunt.quant.config import QATConfig
from foxhunt.quant.transform import prepare_qat
from foxhunt.transforms.checkpointing import apply_checkpointing

M = TypeVar("M", bound=nn.Module)


def apply_model_transforms(model: M, config: TFTConfig, *, qat: QATConfig | None = None) -> M:
    """Apply, in place and in this order, what ``config`` and ``qat`` ask of a new model:
    activation checkpointing (``config.checkpointing``; the constructor has applied it
    already, and applying it again is a no-op that also serves a model whose class does not),
    then QAT prepare. Returns ``model``.

    DDP is not applied here: it wraps last, in the ``Trainer`` (``training/distributed.py``,
    ``wrap_ddp``). Called by the job, ``load_run``, the export loader and the benchmarks, so
    a model built from a config is the same model wherever it is built.
    """
    apply_checkpointing(model, config.checkpointing)  # "none": nothing is wrapped
    if qat is not None:
        prepare_qat(model, qat)
    return model
