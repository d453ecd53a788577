"""The model factory: one place builds a model from its class name."""

from __future__ import annotations

import pytest

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.errors import ConfigError
from foxhunt.model.factory import DEFAULT_MODEL, MODELS, build_model
from foxhunt.model.names import MODEL_NAMES
from foxhunt.model.size import parameter_count


def test_the_default_class_is_the_tft(cfg: TFTConfig) -> None:
    model = build_model(DEFAULT_MODEL, cfg)
    assert type(model) is TemporalFusionTransformer
    assert MODELS["tft"] is TemporalFusionTransformer
    assert tuple(MODELS) == MODEL_NAMES  # the names the CLI offers without importing torch
    assert parameter_count(cfg) == sum(p.numel() for p in model.parameters())


def test_an_unknown_class_is_refused_naming_the_known_ones(cfg: TFTConfig) -> None:
    with pytest.raises(ConfigError, match=r"'lstm'.*\['tft'\]"):
        build_model("lstm", cfg)
