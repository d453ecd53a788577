"""The known inputs of any times, past or future: the clock, the session and the known
groups of a spec (clock.py holds their formulas)."""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from foxhunt.data.calendar import session_features
from foxhunt.data.features.clock import calendar_features, local_times
from foxhunt.data.features.group import Clock, KnownRows
from foxhunt.data.features.spec import FeatureSpec


def known_calendar(
    times: pd.DatetimeIndex,
    spec: FeatureSpec,
    timezone: str,
    symbols: np.ndarray | None = None,
    contracts: np.ndarray | None = None,
) -> np.ndarray:
    """[N, K] the known inputs that the calendar (and a row's contract) decide, at any
    times; the session features on each row's symbol's calendar (`symbols`: [N] names),
    then the known groups (`contracts`: [N] names, for the groups that read them)."""
    parts = [calendar_features(times, timezone)]
    if spec.calendar is not None:
        parts.append(session_features(spec.calendar, times.as_unit("ns").asi8, symbols))
    rows = KnownRows(local_times(times, timezone), contracts)
    for group, windows in spec.known_groups:
        values = cast("Clock", group.compute)(rows, windows)
        keep = [c.name not in spec.dropped for c in group.columns(windows)]
        parts.append(values[:, keep])
    return parts[0] if len(parts) == 1 else np.concatenate(parts, 1)
