"""A normalized frame -> the validated series the features are computed on: contracts as
segments or rolled into one back-adjusted series (data/contracts.py), and a warning at
suspect jumps when the file names no contracts (data/jumps.py)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pandas as pd

from foxhunt.data.contracts import back_adjust, find_contract_column
from foxhunt.data.jumps import warn_suspect_jumps
from foxhunt.data.validate import validate_bars

log = logging.getLogger("foxhunt.data")


def validated_series(
    frame: pd.DataFrame,
    *,
    source: str,
    min_rows: int,
    extra_columns: Sequence[str] = (),
    contract_column: str | None = None,
    roll_adjust: str | None = None,
    may_roll: bool = True,
) -> tuple[pd.DataFrame, str | None]:
    """The checked, sorted frame and the contract column its series are split on (None: one
    series per symbol). `contract_column` and `roll_adjust` are DataConfig's settings;
    `may_roll` False: bars made without contract rolls (the built-in ones), not searched for
    them."""
    column = find_contract_column(frame, contract_column, source)
    valid = validate_bars(
        frame,
        source=source,
        min_rows=min_rows,
        extra_columns=extra_columns,
        contract_column=column,
    )
    if column is None:
        if roll_adjust is not None:
            log.warning(
                "%s: no contract column (looked for %s): --roll-adjust %s has no rolls to adjust",
                source,
                contract_column,
                roll_adjust,
            )
        if may_roll:
            warn_suspect_jumps(valid, source)
        return valid, None
    if roll_adjust is None:
        return valid, column
    adjusted, rolls = back_adjust(valid, column, roll_adjust, source=source)
    for roll in rolls:
        log.info(
            "%s: %s rolls %s -> %s at %s (gap %+.4g at %s, %s back-adjusted)",
            source,
            roll.symbol,
            roll.old,
            roll.new,
            roll.timestamp,
            roll.gap,
            roll.reference,
            roll_adjust,
        )
    return adjusted, None
