"""A prepared run's windows with another base volatility behind their scale (`DataConfig.base`).

Every base shares the rolling base's warm-up (`baseline_rows`), so the windows, and with them
the train, validation and test splits, are the same whichever base scales them: bases are
compared on the same validation windows, and a base with no volatility at one of them (a symbol
it could not be fitted on) is `BaseUnavailable` rather than a smaller split.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from foxhunt.data.pipeline import PreparedData
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.volatility import BaselineRows
from foxhunt.data.windows import SPLITS
from foxhunt.errors import DataError


class BaseUnavailable(DataError):
    """The base has no volatility at some window of the run (it could not be fitted)."""


def base_rows(data: PreparedData, preprocessor: Preprocessor) -> BaselineRows:
    """Every row's base volatility and profile under `preprocessor`'s base, checked to be
    known at the anchor of every window of `data`."""
    if data.encoded is None:
        raise ValueError("the prepared data no longer holds its encoded bars")
    rows = preprocessor.baseline(data.encoded)
    if rows is None:
        raise ValueError("a preprocessor without an intraday profile has no base volatility")
    for name in SPLITS:
        anchors = getattr(data, name).anchors.numpy()
        missing = int(np.count_nonzero(~rows.ready[anchors]))
        if missing:
            raise BaseUnavailable(
                f"base {preprocessor.base!r} has no volatility at {missing} of the "
                f"{len(anchors)} {name} windows (a symbol it could not be fitted on)"
            )
    return rows


def with_base(
    data: PreparedData, preprocessor: Preprocessor, rows: BaselineRows | None = None
) -> PreparedData:
    """`data`'s windows scaled by `preprocessor`'s base (`rows`: its `base_rows`, if already
    computed), and `preprocessor` as the one the run saves."""
    rows = base_rows(data, preprocessor) if rows is None else rows
    # the windows' inputs stay: prepare_data may have scaled the encoded bars' in place
    sets = {name: getattr(data, name).with_baseline(rows) for name in SPLITS}
    return replace(data, **sets, preprocessor=preprocessor)
