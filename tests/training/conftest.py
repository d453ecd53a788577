import pytest

from foxhunt.data import PreparedData
from foxhunt.model.config import TFTConfig
from foxhunt.training.config import TrainingConfig
from helpers import fitted, tiny_model
from helpers import tiny_data as prepare_tiny_data
from helpers import tiny_training as training


@pytest.fixture(scope="session")
def tiny_data() -> PreparedData:
    return prepare_tiny_data()


@pytest.fixture(scope="session")
def tiny_model_config(tiny_data: PreparedData) -> TFTConfig:
    return fitted(tiny_model(dropout=0.1), tiny_data)


@pytest.fixture
def tiny_training() -> TrainingConfig:
    return training(epochs=2, max_steps_per_epoch=6, seed=7)
