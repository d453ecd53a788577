"""What defines a run, as config.json holds it: data, model and training config and the
model class, split by concern."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Any

import torch

from foxhunt import __version__
from foxhunt.data import DataConfig
from foxhunt.migrations import sections_of
from foxhunt.model.config import TFTConfig
from foxhunt.model.factory import DEFAULT_MODEL, check_model_class
from foxhunt.training.config import TrainingConfig


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything that defines a run, split by concern."""

    data: DataConfig
    model: TFTConfig
    training: TrainingConfig
    model_class: str = DEFAULT_MODEL  # a name in model/factory.py's MODELS

    def __post_init__(self) -> None:
        check_model_class(self.model_class)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "data": self.data.to_dict(),
            "model": self.model.to_dict(),
            "training": self.training.to_dict(),
        }
        # only a non-default class is named here, so that checkpoints and identities of
        # earlier TFT runs (which compare this dict) still match; config.json names it always
        if self.model_class != DEFAULT_MODEL:
            out["model_class"] = self.model_class
        return out

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> RunConfig:
        """A saved config (config.json's object, of any format: migrated first)."""
        data = sections_of(saved)
        return cls(
            data=DataConfig.from_dict(data["data"]),
            model=TFTConfig.from_dict(data["model"]),
            training=TrainingConfig.from_dict(data["training"]),
            model_class=data.get("model_class", DEFAULT_MODEL),  # absent in older runs
        )


def versions() -> dict[str, str]:
    return {"foxhunt": __version__, "torch": torch.__version__, "python": platform.python_version()}
