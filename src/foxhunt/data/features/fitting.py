"""What the feature library fits on the training rows only: the session gap, each symbol's
typical volume by minute of day; and the check of the groups' inputs on the training span
(all-NaN: an error naming the input; constant: a warning naming it, and it is dropped)."""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pandas as pd

from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.features.bars import SESSION_GAP_FACTOR
from foxhunt.data.features.base import Features, log_returns
from foxhunt.data.features.compute import minutes_of_day
from foxhunt.data.features.instrument import describe
from foxhunt.data.features.matrix import compact_columns
from foxhunt.data.features.spec import FeatureSpec
from foxhunt.errors import ConfigError, DataError

log = logging.getLogger("foxhunt.data")
MINUTES = 1440


def volume_profile(
    volume: np.ndarray, minute: np.ndarray, symbols: np.ndarray
) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """Each symbol's median log(1 + volume) at each minute of day over the given (training)
    rows; a minute never seen gets the symbol's overall median."""
    out = []
    for symbol in sorted(set(symbols.tolist())):
        mine = symbols == symbol
        logs = pd.Series(np.log1p(volume[mine]))
        table = np.full(MINUTES, float(logs.median()))
        medians = logs.groupby(minute[mine]).median()
        table[medians.index.to_numpy()] = medians.to_numpy()
        out.append((str(symbol), tuple(table.tolist())))
    return tuple(out)


def check_groups(
    spec: FeatureSpec,
    *,
    series_codes: np.ndarray,
    contract_column: str | None,
    longest: int | None = None,
) -> None:
    """What the chosen groups need of the bars (ConfigError naming DataConfig.feature_groups):
    a contract column for `expiry`, series longer than every window. `train` checks it before
    fitting, `inspect --features` before listing (issue 42: it listed inputs train refused)."""
    if spec.reads_contracts and contract_column is None:
        raise ConfigError(
            "DataConfig.feature_groups: group 'expiry' reads each bar's contract and the bars "
            "have no contract column; add one (contract or expiry, or --contract-column NAME) "
            "or leave the group out"
        )
    if longest is None:  # the longest series (given: `series_codes` are some of them)
        longest = int(np.bincount(series_codes).max())
    for column in spec.columns():
        if column.window is not None and column.window >= longest:
            raise ConfigError(
                f"DataConfig.feature_groups: window {column.window} of {column.name} "
                f"({column.group}) is longer than the longest series ({longest} bars); use "
                "shorter windows or more bars"
            )


def fit_feature_state(
    frame: pd.DataFrame,
    spec: FeatureSpec,
    *,
    series_codes: np.ndarray,
    train: np.ndarray,
    timezone: str,
    spacing_ns: int,
    contract_column: str | None = None,
    longest: int | None = None,
) -> FeatureSpec:
    """`spec` with its state fitted on the rows where `train` is set (no state without groups);
    `contract_column` is the frame's contract column (None: it has none); `longest`: the
    longest series of all the bars when `frame` is one symbol's (`merge_states`)."""
    if not spec.groups:
        return spec
    check_groups(spec, series_codes=series_codes, contract_column=contract_column, longest=longest)
    state = replace(spec, session_gap_ns=int(SESSION_GAP_FACTOR * spacing_ns))
    if spec.reads_contracts:
        state = replace(state, contract_column=contract_column)
    if any(g.fitted for g, _ in spec.observed_groups):
        times = pd.DatetimeIndex(frame["timestamp"])[train]
        profile = volume_profile(
            frame["volume"].to_numpy(np.float64)[train],
            minutes_of_day(times, timezone),
            frame["symbol"].to_numpy()[train],
        )
        state = replace(state, volume_profile=profile)
    if spec.static_names:
        state = replace(state, instrument=instrument_descriptors(frame, series_codes, train))
    return state


def merge_states(spec: FeatureSpec, states: list[FeatureSpec]) -> FeatureSpec:
    """The state `fit_feature_state` fits on all the bars, from its fits on each symbol's
    (in symbol order): the per-symbol tables joined, the rest alike in every one."""
    if not spec.groups or not states:
        return spec
    merged = states[0]
    if any(g.fitted for g, _ in spec.observed_groups):
        merged = replace(merged, volume_profile=sum((s.volume_profile for s in states), ()))
    if spec.static_names:
        merged = replace(merged, instrument=sum((s.instrument for s in states), ()))
    return merged


def instrument_descriptors(
    frame: pd.DataFrame, series_codes: np.ndarray, train: np.ndarray
) -> tuple[tuple[str, tuple[float, ...]], ...]:
    """Each symbol's static descriptors (instrument.py) over its training rows."""
    close = frame["close"].to_numpy(np.float64)
    volume = frame["volume"].to_numpy(np.float64)
    returns = log_returns(close, series_codes)
    symbols = frame["symbol"].to_numpy()
    out = []
    for symbol in sorted(set(symbols[train].tolist())):
        mine = train & (symbols == symbol)
        out.append((str(symbol), describe(close[mine], volume[mine], returns[mine])))
    return tuple(out)


def drop_inputs(
    spec: FeatureSpec, encoded: EncodedFrame, dropped: tuple[str, ...]
) -> tuple[FeatureSpec, EncodedFrame]:
    """`spec` and `encoded` less the inputs `dropped`: the columns are squeezed out of the
    computed matrix in place (`encoded`'s inputs are spent), the same values a recomputation
    with the new spec would give."""
    names = (*spec.observed_names, *spec.known_names)
    keep = np.asarray([n not in dropped for n in names])
    narrow = replace(spec, dropped=(*spec.dropped, *dropped))
    before = encoded.features
    features = Features(
        inputs=compact_columns(before.inputs, keep),
        num_observed=int(keep[: before.num_observed].sum()),
        returns=before.returns,
    )
    return narrow, replace(encoded, features=features, finite=features.finite_rows)


def train_ranges(inputs: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[P] min and max of each column's finite values on the training rows (inf / -inf: no
    finite value), a block of rows at a time (no copy of the training rows). fmin / fmax skip
    NaN; a column they find an infinity in (rare) is redone skipping those too."""
    low = np.full(inputs.shape[1], np.inf)
    high = np.full(inputs.shape[1], -np.inf)
    block = 1 << 16
    for start in range(0, len(inputs), block):
        rows = inputs[start : start + block][train[start : start + block]]
        low = np.fmin(low, np.fmin.reduce(rows, axis=0, initial=np.inf))
        high = np.fmax(high, np.fmax.reduce(rows, axis=0, initial=-np.inf))
    for j in np.flatnonzero(np.isinf(low) | np.isinf(high)):
        column = inputs[:, j][train]
        finite = column[np.isfinite(column)]
        low[j], high[j] = (finite.min(), finite.max()) if len(finite) else (np.inf, -np.inf)
    return low, high


def constant_inputs(features: Features, spec: FeatureSpec, train: np.ndarray) -> tuple[str, ...]:
    """The groups' inputs constant over the training rows (DataError if one is all NaN)."""
    return constant_names(spec, *train_ranges(features.inputs, train))


def constant_names(spec: FeatureSpec, low: np.ndarray, high: np.ndarray) -> tuple[str, ...]:
    """The groups' inputs whose training range `low` .. `high` (`train_ranges`, one value per
    input of `spec`) is one value (DataError if one has no finite value)."""
    names = (*spec.observed_names, *spec.known_names)
    library = {c.name for known in (False, True) for c in spec.group_columns(known)}
    constant = []
    for j, name in enumerate(names):
        if name not in library:
            continue
        if not np.isfinite(low[j]):
            raise DataError(
                f"feature {name}: no finite value on the training span; use a shorter window "
                "or more bars (DataConfig.feature_groups)"
            )
        if low[j] == high[j]:
            log.warning("feature %s is constant on the training span: dropped", name)
            constant.append(name)
    return tuple(constant)
