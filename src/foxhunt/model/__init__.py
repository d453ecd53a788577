"""The Temporal Fusion Transformer: config, blocks, model and loss.

Transforms of a built model (checkpointing, QAT) live in ``foxhunt.transforms``."""

from foxhunt.model.config import SEGMENTS, TFTConfig
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
