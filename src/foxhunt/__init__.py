"""foxhunt: Temporal Fusion Transformers for futures bars."""

from foxhunt.batch import TFTBatch
from foxhunt.model.config import TFTConfig
from foxhunt.model.loss import quantile_loss
from foxhunt.model.tft import TemporalFusionTransformer, TFTOutput

__all__ = ["TFTBatch", "TFTConfig", "TFTOutput", "TemporalFusionTransformer", "quantile_loss"]
__version__ = "0.1.0"
