"""A small training job on the built-in synthetic bars, shared by the memory tests."""

from __future__ import annotations

from foxhunt.data import DataConfig
from foxhunt.model import TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.training.config import TrainingConfig


def small_run_config(
    *, batch_size: int, max_steps: int, checkpointing: str | tuple[str, ...] = "none"
) -> RunConfig:
    """One epoch of at most ``max_steps`` steps of a 16-wide TFT over 8 days of 5-min bars."""
    model = TFTConfig(
        num_static=0,
        num_past=1,
        num_future=0,
        lookback=16,
        horizon=4,
        hidden_size=16,
        variable_hidden_size=4,
        attention_heads=2,
        dropout=0.2,
        checkpointing=checkpointing,
    )
    training = TrainingConfig(
        epochs=1,
        batch_size=batch_size,
        max_steps_per_epoch=max_steps,
        patience=0,
        device="cpu",
        seed=3,
    )
    data = DataConfig(synthetic_days=8, lookback=16, horizon=4)
    return RunConfig(data=data, model=model, training=training)
