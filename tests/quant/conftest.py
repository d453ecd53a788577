"""Fixtures of the quantization tests: a tiny TFT trained briefly, in FP32 and with QAT."""

from __future__ import annotations

import copy

import pytest
import torch
from quant_helpers import train_steps
from torch import nn

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.data import PreparedData
from foxhunt.quant import QATConfig, prepare_qat
from helpers import fitted, tiny_data, tiny_model


@pytest.fixture(scope="session")
def data() -> PreparedData:
    return tiny_data()


@pytest.fixture(scope="session")
def model_config(data: PreparedData) -> TFTConfig:
    return fitted(tiny_model(dropout=0.1), data)


@pytest.fixture(scope="session")
def float_model(data: PreparedData, model_config: TFTConfig) -> TemporalFusionTransformer:
    torch.manual_seed(0)
    model = train_steps(TemporalFusionTransformer(model_config), data, model_config, 30)
    assert isinstance(model, TemporalFusionTransformer)
    return model


@pytest.fixture(scope="session")
def qat_model(float_model: TemporalFusionTransformer, data: PreparedData) -> nn.Module:
    """The float model fine-tuned with QAT: observers warm up for 10 steps, then freeze."""
    torch.manual_seed(1)
    model = prepare_qat(copy.deepcopy(float_model), QATConfig(freeze_after=10))
    return train_steps(model, data, float_model.config, 20)
