"""foxhunt: Temporal Fusion Transformers for futures bars."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foxhunt.lazy import lazy_exports
from foxhunt.model.config import TFTConfig

if TYPE_CHECKING:
    from foxhunt.batch import TFTBatch
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

#: the names that need torch, imported on first use: `import foxhunt.cli` (`foxhunt --help`)
#: runs this file and imports no torch
_LAZY = {
    "TFTBatch": "foxhunt.batch",
    "quantile_loss": "foxhunt.model.loss",
    "TemporalFusionTransformer": "foxhunt.model.tft",
    "TFTOutput": "foxhunt.model.tft",
    "apply_checkpointing": "foxhunt.transforms",
    "apply_model_transforms": "foxhunt.transforms",
    "checkpointed_segments": "foxhunt.transforms",
    "remove_checkpointing": "foxhunt.transforms",
}


__getattr__ = lazy_exports(__name__, _LAZY)  # `foxhunt.TFTBatch`, `from foxhunt import ...`
