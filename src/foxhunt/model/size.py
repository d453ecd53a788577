"""How much memory a model config needs, known before the model is built: a run folder's
config.json asking for hidden_size 10**7 is refused with the size, not an OOM kill."""

from __future__ import annotations

import psutil
import torch

from foxhunt.errors import ConfigError
from foxhunt.model.config import TFTConfig
from foxhunt.model.tft import TemporalFusionTransformer

# fp32 weights, gradients and AdamW's two moments; activations come on top
TRAIN_BYTES_PER_PARAMETER = 16
LOAD_BYTES_PER_PARAMETER = 4


def parameter_count(config: TFTConfig) -> int:
    """Exact, without allocating: the model is built on the meta device."""
    with torch.device("meta"):
        model = TemporalFusionTransformer(config)
    return sum(p.numel() for p in model.parameters())


def check_fits_in_memory(
    config: TFTConfig, *, per_parameter: int = TRAIN_BYTES_PER_PARAMETER, what: str = "training"
) -> int:
    """Refuse a model whose parameters alone exceed the available RAM; returns the count."""
    params = parameter_count(config)
    need = params * per_parameter
    available = psutil.virtual_memory().available
    if need > available:
        raise ConfigError(
            f"model.hidden_size={config.hidden_size} gives {params:,} parameters: {what} needs "
            f"at least {need / 2**30:,.1f} GiB, {available / 2**30:,.1f} GiB is available; "
            "use a smaller --hidden-size / --variable-hidden-size"
        )
    return params
