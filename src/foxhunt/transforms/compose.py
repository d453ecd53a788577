"""The one function that applies a model's transforms where a model is built."""

from __future__ import annotations

from typing import TypeVar

from torch import nn

from foxhunt.model.config import TFTConfig
from foxhunt.quant.config import QATConfig
from foxhunt.quant.transform import prepare_qat

M = TypeVar("M", bound=nn.Module)


def apply_model_transforms(model: M, config: TFTConfig, *, qat: QATConfig | None = None) -> M:
    """Apply, in place, what ``qat`` asks of a new model (QAT prepare); returns ``model``.

    ``config.checkpointing`` is not applied here: the model's constructor applies it, the
    one call site of the switch (``model/checkpointing.py``). ``config`` is the model's, for
    the transforms that read it. DDP is not applied here either: it wraps last, in the
    ``Trainer`` (``training/distributed.py``, ``wrap_ddp``). Called by the job, ``load_run``,
    the export loader and the benchmarks, so a model built from a config is the same model
    wherever it is built.
    """
    if qat is not None:
        prepare_qat(model, qat)
    return model
