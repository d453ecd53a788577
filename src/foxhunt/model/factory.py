"""The one place a model is built from its class name and config.

The job, the run loader and the exporter call ``build_model``; a run folder records the
name in config.json (``model_class``), so a folder alone says which class to rebuild.
A model variant is a new entry here, taking a ``TFTConfig``, and its name in
``model/names.py``.
"""

from __future__ import annotations

from foxhunt.errors import ConfigError
from foxhunt.model.config import TFTConfig
from foxhunt.model.names import DEFAULT_MODEL
from foxhunt.model.tft import TemporalFusionTransformer

#: each name of ``model/names.py``'s MODEL_NAMES, to its class
MODELS: dict[str, type[TemporalFusionTransformer]] = {DEFAULT_MODEL: TemporalFusionTransformer}


def check_model_class(name: str) -> str:
    if name not in MODELS:
        raise ConfigError(f"unknown model class {name!r}; known: {sorted(MODELS)}")
    return name


def build_model(name: str, config: TFTConfig) -> TemporalFusionTransformer:
    """A fresh model of class ``name`` (a key of MODELS) built from ``config``."""
    return MODELS[check_model_class(name)](config)
