"""Fixtures of the quantization tests: a tiny TFT trained briefly, in FP32 and with QAT."""

from __future__ import annotations

import copy

import pytest
import torch
from quant_helpers import train_steps
from torch import nn

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.data import DataConfig, PreparedData, prepare_data
from foxhunt.quant import QATConfig, prepare_qat
from foxhunt.training.job import fit_model_config


@pytest.fixture(scope="session")
def data() -> PreparedData:
    return prepare_data(DataConfig(synthetic_days=8, lookback=16, horizon=4))


@pytest.fixture(scope="session")
def model_config(data: PreparedData) -> TFTConfig:
    base = TFTConfig(
        num_static=0, num_past=1, num_future=0, lookback=16, horizon=4, hidden_size=16,
        variable_hidden_size=4, attention_heads=2, dropout=0.1,
    )  # fmt: skip
    return fit_model_config(base, data)


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
