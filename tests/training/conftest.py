import pytest

from foxhunt.data import DataConfig, PreparedData, prepare_data
from foxhunt.model.config import TFTConfig
from foxhunt.training.config import TrainingConfig
from foxhunt.training.job import fit_model_config


@pytest.fixture(scope="session")
def tiny_data() -> PreparedData:
    return prepare_data(DataConfig(synthetic_days=8, lookback=16, horizon=4))


@pytest.fixture(scope="session")
def tiny_model_config(tiny_data: PreparedData) -> TFTConfig:
    base = TFTConfig(
        num_static=0,
        num_past=1,
        num_future=0,
        lookback=16,
        horizon=4,
        hidden_size=16,
        variable_hidden_size=4,
        attention_heads=2,
        dropout=0.1,
    )
    return fit_model_config(base, tiny_data)


@pytest.fixture
def tiny_training() -> TrainingConfig:
    return TrainingConfig(
        epochs=2, batch_size=32, max_steps_per_epoch=6, patience=0, device="cpu", seed=7
    )
