"""The Temporal Fusion Transformer: config, blocks, model and loss."""

from foxhunt.model.checkpointing import (
    apply_checkpointing,
    checkpointed_segments,
    remove_checkpointing,
)
from foxhunt.model.config import SEGMENTS, TFTConfig
from foxhunt.model.factory import build_model
from foxhunt.model.loss import quantile_loss, quantile_loss_per_quantile
from foxhunt.model.tft import TemporalFusionTransformer, TFTOutput

__all__ = [
    "SEGMENTS",
    "TFTConfig",
    "TFTOutput",
    "TemporalFusionTransformer",
    "apply_checkpointing",
    "build_model",
    "checkpointed_segments",
    "quantile_loss",
    "quantile_loss_per_quantile",
    "remove_checkpointing",
]
