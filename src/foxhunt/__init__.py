"""foxhunt: Temporal Fusion Transformers for futures bars."""

from foxhunt.batch import TFTBatch
from foxhunt.model.config import TFTConfig
from foxhunt.model.loss import quantile_loss
from foxhunt.model.tft import TemporalFusionTransformer, TFTOutput
from foxhunt.transforms import (
    apply_checkpointing,
    apply_model_transforms,
    checkpointed_segments,
    remove_checkpointing,
)

__all__ = [
    "TFTBatch",
    "TFTConfig",
    "TFTOutput",
    "TemporalFusionTransformer",
    "apply_checkpointing",
    "apply_model_transforms",
    "checkpointed_segments",
    "quantile_loss",
    "remove_checkpointing",
]
__version__ = "0.1.0"
