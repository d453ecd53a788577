"""The bar spacing of a file against a model's: 1-minute bars fed to a model trained on
5-minute bars were forecast at 5-minute steps, exit 0."""

from __future__ import annotations

import numpy as np
import pandas as pd

from foxhunt.errors import DataError

#: a file's median spacing may differ this much from the model's (clock jitter, not a new bar)
TOLERANCE = 0.1


def median_spacing(frame: pd.DataFrame) -> pd.Timedelta | None:
    """Median time between consecutive bars of a symbol (in any row order; no symbol
    column: one symbol); None when no symbol has two distinct times."""
    symbols = frame["symbol"] if "symbol" in frame else pd.Series(0, index=frame.index)
    codes = pd.factorize(symbols.astype(str))[0]
    times = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    order = np.lexsort((times, codes))
    codes, times = codes[order], times[order]
    steps = np.diff(times)[codes[1:] == codes[:-1]]
    steps = steps[steps > 0]
    return pd.Timedelta(int(np.median(steps)), unit="ns") if len(steps) else None


def check_spacing(frame: pd.DataFrame, expected: pd.Timedelta, source: str) -> None:
    """DataError unless the bars of `frame` are `expected` apart (median, within 10%)."""
    found = median_spacing(frame)
    if found is None or abs(found - expected) <= TOLERANCE * expected:
        return
    raise DataError(
        f"{source}: bars are {found} apart (median), the model was trained on bars {expected} "
        "apart; resample the bars to the model's spacing or use a run trained on these"
    )
