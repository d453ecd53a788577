"""Small configs and batches shared by the model tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from foxhunt import TFTBatch, TFTConfig
from foxhunt.bench.memory import random_batch


def small_config(**overrides: object) -> TFTConfig:
    """A model small enough to build and step in milliseconds; every input kind present."""
    kwargs: dict[str, object] = {
        "num_static": 3,
        "static_cardinalities": (4, 2),
        "num_past": 6,
        "num_future": 2,
        "hidden_size": 16,
        "variable_hidden_size": 4,
        "attention_heads": 4,
        "lookback": 7,
        "horizon": 3,
        "quantiles": (0.1, 0.5, 0.9),
        "dropout": 0.1,
        # the paper's head: a "baseline" head starts at zero, so nothing upstream of it gets a
        # gradient in the first step and gradient comparisons would hold vacuously
        "output": "direct",
    }
    kwargs.update(overrides)
    return TFTConfig(**kwargs)  # type: ignore[arg-type]


def make_batch(cfg: TFTConfig, batch_size: int = 5, seed: int = 0) -> TFTBatch:
    return random_batch(cfg, batch_size, seed=seed)


@pytest.fixture
def cfg() -> TFTConfig:
    return small_config()


@pytest.fixture(name="small_config")
def small_config_factory() -> Callable[..., TFTConfig]:
    return small_config


@pytest.fixture(name="make_batch")
def make_batch_factory() -> Callable[..., TFTBatch]:
    return make_batch
