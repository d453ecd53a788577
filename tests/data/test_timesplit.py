"""DataConfig.split: explicit fold bounds, validated, saved in config.json and read back."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import DataConfig
from foxhunt.data.timesplit import UNUSED, TimeSplit, time_split_codes
from foxhunt.errors import ConfigError

SPLIT = TimeSplit(
    train_start="2024-03-04T10:00:00-05:00",
    validation_start="2024-03-04T11:00:00-05:00",
    test_start="2024-03-04T12:00:00-05:00",
    test_end="2024-03-04T13:00:00-05:00",
    embargo="30min",
)


def test_codes_follow_the_bounds() -> None:
    times = pd.date_range(
        "2024-03-04 09:30", "2024-03-04 13:30", freq="30min", tz="America/New_York"
    )
    codes = time_split_codes(times.as_unit("ns").asi8, SPLIT)
    # 09:30 unused, 10:00 10:30 train, 11:00 validation, 11:30 embargo, 12:00 12:30 test, after
    np.testing.assert_array_equal(codes, [UNUSED, 0, 0, 1, UNUSED, 2, 2, UNUSED, UNUSED])


def test_split_round_trips_through_config_json() -> None:
    config = DataConfig(split=SPLIT)
    assert DataConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"test_start": "2024-03-04T12:00:00"}, "offset"),
        ({"embargo": "-1h"}, "duration"),
        ({"validation_start": "2024-03-04T11:45:00-05:00"}, "test_start - embargo"),
        ({"test_end": "2024-03-04T11:00:00-05:00"}, "test_end"),
    ],
)
def test_bad_bounds_say_what_to_change(change: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TimeSplit(**{**SPLIT.to_dict(), **change})
