"""What the in-process sections of benchmarks/gpu_check.py share: the model as a run builds it,
and a step timed on its device (a GPU's queued work waited for on both sides)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from foxhunt.model.config import TFTConfig
from foxhunt.model.factory import DEFAULT_MODEL, build_model
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.transforms import apply_model_transforms


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device) -> tuple[float, Any]:
    """``fn()``'s seconds on ``device`` and its result."""
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - start, out


def build(cfg: TFTConfig) -> TemporalFusionTransformer:
    """The model a run trains from ``cfg``: built and transformed as the job does."""
    return apply_model_transforms(build_model(DEFAULT_MODEL, cfg), cfg)
