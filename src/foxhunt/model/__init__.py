"""The Temporal Fusion Transformer: config, blocks, model and loss.

Transforms of a built model (checkpointing, QAT) live in ``foxhunt.transforms``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foxhunt.lazy import lazy_exports
from foxhunt.model.config import SEGMENTS, TFTConfig

if TYPE_CHECKING:
    from foxhunt.model.factory import build_model
    from foxhunt.model.loss import quantile_loss, quantile_loss_per_quantile
    from foxhunt.model.tft import TemporalFusionTransformer, TFTOutput

__all__ = [
    "SEGMENTS",
    "TFTConfig",
    "TFTOutput",
    "TemporalFusionTransformer",
    "build_model",
    "quantile_loss",
    "quantile_loss_per_quantile",
]

#: the names that need torch, imported on first use: the config alone imports none (the
#: CLI's --help reads it)
_LAZY = {
    "build_model": "foxhunt.model.factory",
    "quantile_loss": "foxhunt.model.loss",
    "quantile_loss_per_quantile": "foxhunt.model.loss",
    "TemporalFusionTransformer": "foxhunt.model.tft",
    "TFTOutput": "foxhunt.model.tft",
}

__getattr__ = lazy_exports(__name__, _LAZY)
