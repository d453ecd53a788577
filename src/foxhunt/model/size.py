"""How much memory a model config needs, known before the model is built: a run folder's
config.json asking for hidden_size 10**7 is refused with the size, not an OOM kill."""

from __future__ import annotations

import psutil
import torch

from foxhunt.errors import ConfigError
from foxhunt.model.config import TFTConfig
from foxhunt.model.factory import DEFAULT_MODEL, build_model

# fp32 weights, gradients and AdamW's two moments; activations come on top
TRAIN_BYTES_PER_PARAMETER = 16


def parameter_count(config: TFTConfig, model_class: str = DEFAULT_MODEL) -> int:
    """Exact, without allocating: the model is built on the meta device."""
    try:
        with torch.device("meta"):
            model = build_model(model_class, config)
    except (RuntimeError, OverflowError):  # a size product beyond int64: no memory holds it
        raise ConfigError(
            f"model config (hidden_size={config.hidden_size}, lookback={config.lookback}, "
            f"horizon={config.horizon}) describes a model too large to represent; "
            "use smaller sizes (a damaged config.json?)"
        ) from None
    return sum(p.numel() for p in model.parameters())


def buffer_bytes(config: TFTConfig) -> int:
    """The one size-dependent buffer: the decoder's causal mask, H x (L + H) bools."""
    d = config.inputs
    return d.horizon * (d.lookback + d.horizon)


def check_fits_in_memory(
    config: TFTConfig,
    *,
    per_parameter: int = TRAIN_BYTES_PER_PARAMETER,
    what: str = "training",
    model_class: str = DEFAULT_MODEL,
) -> int:
    """Refuse a model whose parameters alone exceed the available RAM; returns the count."""
    params = parameter_count(config, model_class)
    need = params * per_parameter + buffer_bytes(config)
    available = psutil.virtual_memory().available
    if need > available:
        raise ConfigError(
            f"model.hidden_size={config.hidden_size} gives {params:,} parameters: {what} needs "
            f"at least {need / 2**30:,.1f} GiB, {available / 2**30:,.1f} GiB is available; "
            + (
                "use a smaller --hidden-size / --variable-hidden-size"
                if what == "training"
                else "config.json asks for it: a damaged file, or a run for a larger machine"
            )
        )
    return params


def activation_bytes(config: TFTConfig, batch_size: int) -> int:
    """A floor on one training step's saved activations: one fp32 value per variable per
    hidden unit per time step, plus the attention weights (T x T per head). The real peak is
    several times this; it only has to expose what cannot possibly fit."""
    d = config.inputs
    steps = d.lookback + d.horizon
    variables = d.num_static + d.num_past + d.num_future + 1
    per_sample = steps * config.hidden_size * variables + config.attention_heads * steps * steps
    return 4 * batch_size * per_sample


def check_step_fits_in_memory(
    config: TFTConfig, batch_size: int, *, model_class: str = DEFAULT_MODEL
) -> None:
    """Refuse a model and batch whose weights, optimizer state and activations exceed RAM
    (an OOM kill is a hang or a lost run, not a message)."""
    params = check_fits_in_memory(config, model_class=model_class)
    need = params * TRAIN_BYTES_PER_PARAMETER + activation_bytes(config, batch_size)
    available = psutil.virtual_memory().available
    if need > available:
        raise ConfigError(
            f"lookback {config.lookback} + horizon {config.horizon}, hidden_size "
            f"{config.hidden_size} and batch {batch_size} need at least {need / 2**30:,.1f} GiB "
            f"per training step, {available / 2**30:,.1f} GiB is available; use a smaller "
            "--batch-size, --lookback or --hidden-size"
        )
