"""Small configs and batches shared by the model tests (``tests/helpers``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from foxhunt import TFTBatch, TFTConfig
from helpers import make_batch, small_model


def small_config(**overrides: object) -> TFTConfig:
    """``helpers.small_model`` with dropout 0.1 and quantiles (0.1, 0.5, 0.9), spelled out."""
    return small_model(**{"quantiles": (0.1, 0.5, 0.9), "dropout": 0.1, **overrides})


@pytest.fixture
def cfg() -> TFTConfig:
    return small_config()


@pytest.fixture(name="small_config")
def small_config_factory() -> Callable[..., TFTConfig]:
    return small_config


@pytest.fixture(name="make_batch")
def make_batch_factory() -> Callable[..., TFTBatch]:
    return make_batch
