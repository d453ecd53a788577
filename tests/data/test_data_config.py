import json
from pathlib import Path
from typing import Any

import pytest

from foxhunt.data import DataConfig
from foxhunt.errors import ConfigError


def test_defaults_round_trip_through_json() -> None:
    config = DataConfig(
        path=Path("bars.parquet"), observed_columns=("spread",), volatility_windows=(6, 24)
    )
    again = DataConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config
    assert again.path == Path("bars.parquet") and again.volatility_windows == (6, 24)


def test_lists_and_strings_are_normalized() -> None:
    config = DataConfig(path="x.csv", known_columns=["holiday"])
    assert config.path == Path("x.csv") and config.known_columns == ("holiday",)


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("lookback", 0, "DataConfig.lookback=0"),
        ("horizon", 1.5, "DataConfig.horizon=1.5"),
        ("max_gap", "soon", "DataConfig.max_gap='soon'.*10min"),
        ("max_gap", "-5min", "DataConfig.max_gap"),
        ("val_fraction", 1.2, r"DataConfig.val_fraction=1.2: must be a number in \[0, 1\)"),
        ("test_fraction", -0.1, "DataConfig.test_fraction"),
        ("timezone", "Mars/Olympus", "DataConfig.timezone='Mars/Olympus'"),
        ("volatility_windows", (1,), "DataConfig.volatility_windows"),
        ("volatility_windows", (12, 12), "distinct"),
        ("observed_columns", ("a", "a"), "DataConfig.observed_columns.*distinct"),
        ("known_columns", ("timestamp",), "DataConfig.known_columns"),
        ("synthetic_days", 0, "DataConfig.synthetic_days=0"),
        ("synthetic_symbols", (), "DataConfig.synthetic_symbols"),
        ("symbol_column", "", "DataConfig.symbol_column"),
    ],
)
def test_invalid_field_is_named(field: str, value: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        DataConfig(**{field: value})


def test_fractions_must_leave_training_time() -> None:
    with pytest.raises(ConfigError, match="val_fraction \\+ test_fraction"):
        DataConfig(val_fraction=0.5, test_fraction=0.5)


def test_column_cannot_be_observed_and_known() -> None:
    with pytest.raises(ConfigError, match=r"\['x'\] also in observed_columns"):
        DataConfig(observed_columns=("x",), known_columns=("x",))


def test_unknown_field_in_dict() -> None:
    with pytest.raises(ConfigError, match="unknown data config fields \\['lookbak'\\]"):
        DataConfig.from_dict({"lookbak": 3})


def test_max_gap_accepts_durations_auto_and_none() -> None:
    for value in ("10min", "auto", None, "1h"):
        assert DataConfig(max_gap=value).max_gap == value
