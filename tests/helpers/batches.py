"""Random batches of the right shapes for a model config (``foxhunt.bench``'s generator)."""

from __future__ import annotations

from foxhunt.batch import TFTBatch
from foxhunt.bench.memory import random_batch
from foxhunt.model import TFTConfig

__all__ = ["make_batch", "random_batch"]


def make_batch(cfg: TFTConfig, batch_size: int = 5, seed: int = 0) -> TFTBatch:
    """``batch_size`` random windows for ``cfg`` (targets included), drawn from ``seed``."""
    return random_batch(cfg, batch_size, seed=seed)
