"""foxhunt: Temporal Fusion Transformers for futures bars."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:  # PEP 562: `foxhunt.TFTBatch`, `from foxhunt import ...`
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
