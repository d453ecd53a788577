"""foxhunt: Temporal Fusion Transformers for futures bars."""

from foxhunt.batch import TFTBatch
from foxhunt.model.checkpointing import (
    apply_checkpointing,
    checkpointed_segments,
    remove_checkpointing,
)
from foxhunt.model.config import TFTConfig
from foxhunt.model.loss import quantile_loss
from foxhunt.model.tft import TemporalFusionTransformer, TFTOutput

__all__ = [
    "TFTBatch",
    "TFTConfig",
    "TFTOutput",
    "TemporalFusionTransformer",
    "apply_checkpointing",
    "checkpointed_segments",
    "quantile_loss",
    "remove_checkpointing",
]
__version__ = "0.1.0"
