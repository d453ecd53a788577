import pytest
from synthetic_bars import make_bars

from foxhunt.baselines import BarReturns


@pytest.fixture
def bars() -> BarReturns:
    return make_bars()
