"""Tiny data, model and training configs, and the same tiny model as command-line flags."""

from __future__ import annotations

from typing import Any

from foxhunt.data import DataConfig
from foxhunt.model import TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.training.config import TrainingConfig

#: eight sessions of synthetic 5-minute bars (GARCH: the machinery's tests need no planted
#: driver, nor the oracle's seconds), windows of 16 bars forecasting 4
TINY_DATA = DataConfig(
    synthetic_market="garch", synthetic_days=8, lookback=16, horizon=4, feature_groups=()
)

#: ``TINY_DATA`` on the command line (tests that read a Parquet file leave it out)
SYNTHETIC_CLI = ["--synthetic-market", "garch", "--synthetic-days", "8"]

#: the tiny model (8 wide) and batch on the command line; callers add steps, epochs, seed.
#: No head fallback: its seconds per run buy the machinery's tests nothing
#: (tests/jobs/test_fallback.py tests it)
TINY_CLI = [
    "--lookback", "16", "--horizon", "4", "--hidden-size", "8", "--variable-hidden-size", "4",
    "--attention-heads", "2", "--batch-size", "32", "--patience", "0", "--no-head-fallback",
]  # fmt: skip


def tiny_model(**overrides: Any) -> TFTConfig:
    """The TFT of the job tests over ``TINY_DATA``, 16 wide; its inputs unset until
    ``fit_model_config`` (``helpers.fitted``) takes them from the data."""
    fields: dict[str, Any] = {"hidden_size": 16, "variable_hidden_size": 4, "attention_heads": 2}
    return TFTConfig(**{**fields, **overrides})


def small_model(**overrides: Any) -> TFTConfig:
    """A model small enough to build and step in milliseconds; every input kind present.

    The paper's head ("direct"): a "baseline" head starts at zero, so nothing upstream of it
    gets a gradient in the first step and gradient comparisons would hold vacuously.
    """
    fields: dict[str, Any] = {
        "num_static": 3, "static_cardinalities": (4, 2), "num_past": 6, "num_future": 2,
        "hidden_size": 16, "variable_hidden_size": 4, "attention_heads": 4, "lookback": 7,
        "horizon": 3, "output": "direct",
    }  # fmt: skip
    return TFTConfig(**{**fields, **overrides})


def tiny_training(**overrides: Any) -> TrainingConfig:
    """One epoch of at most 3 steps of 32 windows on the CPU, seed 3, no early stopping, no
    head fallback (as ``TINY_CLI``)."""
    fields: dict[str, Any] = {
        "epochs": 1, "batch_size": 32, "max_steps_per_epoch": 3, "patience": 0, "device": "cpu",
        "seed": 3, "head_fallback": False,
    }  # fmt: skip
    return TrainingConfig(**{**fields, **overrides})


def tiny_run(
    *,
    model: TFTConfig | None = None,
    training: TrainingConfig | None = None,
    data: DataConfig = TINY_DATA,
) -> RunConfig:
    """A whole run's config for ``train``: ``tiny_model()`` and ``tiny_training()`` unless given."""
    model = tiny_model() if model is None else model
    training = tiny_training() if training is None else training
    return RunConfig(data=data, model=model, training=training)
