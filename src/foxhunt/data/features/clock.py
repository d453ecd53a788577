"""Known inputs decided by the clock alone, so they exist for future bars too:

    minute_sin/cos    minute of day on a 24h circle            (always; today's inputs)
    weekday_sin/cos   day of week on a 7-day circle            (always)
    minutes_to_close, minutes_since_open, early_close  of the bar's exchange session (with a
                      calendar, data/calendar.py)
    group "cycles":   month_sin/cos  the time of year on a 12-month circle (month + day
                      fraction), days_to_month_end  days left in the month (month-end flows)
All in the feature timezone's local time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from foxhunt.data.features.group import Column, Group, KnownRows


def local_times(times: pd.DatetimeIndex, timezone: str) -> pd.DatetimeIndex:
    return times.tz_convert(timezone) if times.tz is not None else times


def calendar_features(times: pd.DatetimeIndex, timezone: str) -> np.ndarray:
    """[N, 4] minute-of-day and day-of-week on circles, in local time of `timezone`."""
    local = local_times(times, timezone)
    minute = local.hour.to_numpy() * 60.0 + local.minute.to_numpy() + local.second.to_numpy() / 60
    day = local.day_of_week.to_numpy().astype(np.float64)
    a, b = 2 * np.pi * minute / 1440.0, 2 * np.pi * day / 7.0
    return np.stack([np.sin(a), np.cos(a), np.sin(b), np.cos(b)], axis=1)


def cycles(rows: KnownRows, windows: tuple[int, ...]) -> np.ndarray:
    """[N, 3] month_sin, month_cos, days_to_month_end of local times."""
    local = rows.local
    days = local.days_in_month.to_numpy().astype(np.float64)
    day = local.day.to_numpy() - 1 + (local.hour.to_numpy() * 60 + local.minute.to_numpy()) / 1440
    angle = 2 * np.pi * (local.month.to_numpy() - 1 + day / days) / 12
    return np.stack([np.sin(angle), np.cos(angle), days - day], axis=1)


CYCLES = Group(
    name="cycles",
    summary="time of year on a circle and days to the month end (known in advance)",
    windows=(),
    columns=lambda w: [
        Column(n, "cycles", None, "0 bars") for n in ("month_sin", "month_cos", "days_to_month_end")
    ],
    compute=cycles,  # known groups read the local times
    known=True,
)
