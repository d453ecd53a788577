"""Shared fixtures of the data tests: small synthetic bars, the real ES files, log capture."""

import logging
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from foxhunt.data import generate_bars

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
ES_PARQUET = SHARED_DATA / "ES_FUT_60d_5min.parquet"
ES_CSV = SHARED_DATA / "ES_5min.csv"


def _real(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"real ES bars not available: {path} is missing (see ../shared/data)")
    return path


@pytest.fixture
def es_parquet() -> Path:
    return _real(ES_PARQUET)


@pytest.fixture
def es_csv() -> Path:
    return _real(ES_CSV)


@pytest.fixture
def bars() -> pd.DataFrame:
    """Four sessions of 5-minute synthetic ES bars (1104 rows)."""
    return generate_bars(days=4, seed=1)


@pytest.fixture
def data_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """caplog that sees "foxhunt.data" records even if the CLI turned propagation off."""
    logger = logging.getLogger("foxhunt.data")
    logger.addHandler(caplog.handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(previous)
