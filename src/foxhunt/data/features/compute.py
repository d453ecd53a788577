"""compute_features: a validated frame's inputs, today's set then the chosen groups'."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import cast

import numpy as np
import pandas as pd

from foxhunt.data.features.bars import Bars, OtherSymbols, session_gap, session_numbers
from foxhunt.data.features.base import BASE_OBSERVED, Features, base_columns, log_returns
from foxhunt.data.features.blocks import plan_blocks
from foxhunt.data.features.expiry import check_contracts
from foxhunt.data.features.group import Fill, Group
from foxhunt.data.features.known import known_calendar
from foxhunt.data.features.matrix import compact_columns, write_columns
from foxhunt.data.features.spec import FeatureSpec
from foxhunt.errors import ConfigError, DataError

#: groups computed at once, each into its own columns (numpy, pandas and scipy release the
#: GIL in their loops, so two use both cores of a 2-core machine)
GROUP_THREADS = 2


def minutes_of_day(times: pd.DatetimeIndex, timezone: str) -> np.ndarray:
    local = times.tz_convert(timezone) if times.tz is not None else times
    return np.asarray(local.hour * 60 + local.minute, dtype=np.int64)


def make_bars(
    frame: pd.DataFrame, spec: FeatureSpec, timezone: str, series: np.ndarray, returns: np.ndarray
) -> Bars:
    times = pd.DatetimeIndex(frame["timestamp"])
    times_ns = times.as_unit("ns").asi8
    price = {c: frame[c].to_numpy(np.float64) for c in ("open", "high", "low", "close", "volume")}
    gap = session_gap(series, times_ns, spec.session_gap_ns)
    return Bars(
        open=price["open"],
        high=price["high"],
        low=price["low"],
        close=price["close"],
        volume=price["volume"],
        times_ns=times_ns,
        returns=returns,
        series=series,
        session=session_numbers(series, times_ns, gap),
        minute=minutes_of_day(times, timezone),
        symbols=frame["symbol"].to_numpy(),
        volume_profile={s: np.asarray(v) for s, v in spec.volume_profile},
        gap_ns=gap,
    )


def check_cross(symbols: np.ndarray, spec: FeatureSpec) -> None:
    """A ConfigError naming the group that reads other symbols when `symbols` [N] are one."""
    crossing = next((g.name for g, _ in spec.observed_groups if g.cross), None)  # "cross"
    if crossing is not None and len(np.unique(symbols)) < 2:
        raise ConfigError(
            f"DataConfig.feature_groups: group '{crossing}' needs several symbols and the bars "
            f"hold one ({symbols[0]}); leave it out or add symbols"
        )


def row_contracts(frame: pd.DataFrame, spec: FeatureSpec) -> np.ndarray | None:
    """[N] each row's contract for the groups that read it (None: none does)."""
    column = spec.contract_column
    if column is None or not spec.reads_contracts:
        return None
    source = str(frame.attrs.get("source", "the bars"))
    if column not in frame.columns:
        raise DataError(
            f"{source}: no contract column {column!r}, which "
            "the run's group 'expiry' reads; use bars that name each bar's contract"
        )
    contracts = np.asarray(frame[column].astype(str).to_numpy(), dtype=object)
    times = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    check_contracts(contracts, times, column=column, source=source)
    return contracts


def library_inputs(
    frame: pd.DataFrame,
    spec: FeatureSpec,
    timezone: str,
    series: np.ndarray,
    returns: np.ndarray,
    others: OtherSymbols | None = None,
) -> tuple[np.ndarray, int]:
    """[N, P] float32 inputs with the library's groups, each group writing straight into its
    columns of one matrix (matrix.py), and the number of observed columns. Every group's
    columns are computed; those the spec dropped are then squeezed out in place. `others`:
    what the cross group reads of the other symbols when `frame` holds one (streamed.py)."""
    full = replace(spec, dropped=())
    names = (*full.observed_names, *full.known_names)
    inputs = np.empty((len(returns), len(names)), dtype=np.float32)
    for _ in library_blocks(frame, spec, timezone, series, returns, others, out=inputs):
        pass
    keep = np.asarray([n not in spec.dropped for n in names])
    return compact_columns(inputs, keep), int(keep[: len(full.observed_names)].sum())


Rows = tuple[int, int, np.ndarray]


def library_blocks(
    frame: pd.DataFrame,
    spec: FeatureSpec,
    timezone: str,
    series: np.ndarray,
    returns: np.ndarray,
    others: OtherSymbols | None = None,
    *,
    out: np.ndarray | None = None,
) -> Iterator[Rows]:
    """The library's float32 inputs of every column (the dropped too) a block of rows at a
    time (blocks.py): (start, stop, rows [stop - start, P]); with `out` [N, P], views of it.
    A frame whose symbols are no longer than a block is one block, computed as a whole."""
    times_ns = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    spec = replace(spec, session_gap_ns=session_gap(series, times_ns, spec.session_gap_ns))
    full = replace(spec, dropped=())
    width = len(full.observed_names) + len(full.known_names)
    session = session_numbers(series, times_ns, spec.session_gap_ns or 0)  # int: set above
    plan = plan_blocks(frame["symbol"].to_numpy(), session, spec.warmup_bars)
    contracts = row_contracts(frame, spec)  # checked once, over every bar
    if len(plan) == 1:
        whole = np.empty((len(returns), width), np.float32) if out is None else out
        _fill(whole, frame, spec, timezone, series, returns, contracts, others, crossing=True)
        yield 0, len(returns), whole
        return
    cross = _cross_columns(frame, spec, timezone, series, returns, others)
    for block in plan:
        rows = slice(block.prefix, block.stop)
        part = np.empty((block.stop - block.prefix, width), np.float32)
        mine = None if contracts is None else contracts[rows]
        _fill(
            part,
            frame.iloc[rows],
            spec,
            timezone,
            series[rows],
            returns[rows],
            mine,
            crossing=False,
        )
        kept = part[block.start - block.prefix :]
        if out is not None:
            out[block.start : block.stop] = kept
            kept = out[block.start : block.stop]
        if cross is not None:
            columns, values = cross
            kept[:, columns] = values[block.start : block.stop]
        yield block.start, block.stop, kept


def _slots(spec: FeatureSpec, first: int) -> list[tuple[Group, tuple[int, ...], slice]]:
    """Each observed group's columns of the matrix, from column `first` on."""
    slots = []
    for group, windows in spec.observed_groups:
        width = len(group.columns(windows))
        slots.append((group, windows, slice(first, first + width)))
        first += width
    return slots


def _fill(
    inputs: np.ndarray,
    frame: pd.DataFrame,
    spec: FeatureSpec,
    timezone: str,
    series: np.ndarray,
    returns: np.ndarray,
    contracts: np.ndarray | None,
    others: OtherSymbols | None = None,
    *,
    crossing: bool,
) -> None:
    """Every column of `inputs` [N, P] for `frame`'s rows (`contracts`: their checked
    `row_contracts`); the cross group's only when `crossing` (a block of one symbol leaves
    them to `_cross_columns`)."""
    bars = _bars(frame, spec, timezone, series, returns, others, crossing=crossing)
    full = replace(spec, dropped=())
    base = base_columns(frame, returns, spec.volatility_windows, series)
    j = len(base)
    write_columns(inputs[:, :j], base)
    del base
    slots = [s for s in _slots(spec, j) if crossing or not s[0].cross]
    with ThreadPoolExecutor(GROUP_THREADS) as pool:  # disjoint columns: the same numbers
        jobs = [
            pool.submit(cast("Fill", group.compute), bars, windows, inputs[:, columns])
            for group, windows, columns in slots
        ]
        for done in jobs:
            done.result()  # a group's error, raised here
    j = len(full.observed_names) - len(spec.observed_columns)
    for name in spec.observed_columns:
        inputs[:, j], j = frame[name].to_numpy(np.float64), j + 1
    times, symbols = pd.DatetimeIndex(frame["timestamp"]), frame["symbol"].to_numpy()
    known = known_calendar(times, full, timezone, symbols, contracts)
    write_columns(inputs[:, j : j + known.shape[1]], list(known.T))
    j += known.shape[1]
    for name in spec.known_columns:
        inputs[:, j], j = frame[name].to_numpy(np.float64), j + 1


def _bars(
    frame: pd.DataFrame,
    spec: FeatureSpec,
    timezone: str,
    series: np.ndarray,
    returns: np.ndarray,
    others: OtherSymbols | None,
    *,
    crossing: bool,
) -> Bars:
    """The bars the groups read; when `crossing`, checked to hold several symbols for the
    cross group (its own, or `others`')."""
    bars = replace(make_bars(frame, spec, timezone, series, returns), others=others)
    if crossing:
        check_cross(bars.symbols if others is None else np.asarray(others.names), spec)
    return bars


def _cross_columns(
    frame: pd.DataFrame,
    spec: FeatureSpec,
    timezone: str,
    series: np.ndarray,
    returns: np.ndarray,
    others: OtherSymbols | None,
) -> tuple[slice, np.ndarray] | None:
    """The cross group's columns of the matrix and its [N, k] float32 values over the whole
    frame (None: no cross group); it reads the other symbols at each row, so no block of one
    symbol can compute it."""
    first = len(BASE_OBSERVED) + len(spec.volatility_windows)
    for group, windows, columns in _slots(spec, first):
        if group.cross:
            bars = _bars(frame, spec, timezone, series, returns, others, crossing=True)
            values = np.empty((len(returns), columns.stop - columns.start), np.float32)
            cast("Fill", group.compute)(bars, windows, values)
            return columns, values
    return None


def compute_features(
    frame: pd.DataFrame,
    spec: FeatureSpec,
    *,
    timezone: str,
    symbol_codes: np.ndarray,
    others: OtherSymbols | None = None,
) -> Features:
    """Inputs and returns of a validated frame (sorted by symbol [, contract] then time);
    `symbol_codes` are the series codes that bound every rolling statistic. Today's inputs
    alone are float64, as before the library; with its groups, float32. `others`: the other
    symbols' files, for a frame of one symbol computed alone (streamed.py)."""
    returns = log_returns(frame["close"].to_numpy(dtype=np.float64), symbol_codes)
    if spec.groups:
        inputs, num_observed = library_inputs(frame, spec, timezone, symbol_codes, returns, others)
        return Features(inputs=inputs, num_observed=num_observed, returns=returns)
    columns = base_columns(frame, returns, spec.volatility_windows, symbol_codes)
    columns += [frame[c].to_numpy(np.float64) for c in spec.observed_columns]
    num_observed = len(columns)
    times, symbols = pd.DatetimeIndex(frame["timestamp"]), frame["symbol"].to_numpy()
    columns += list(known_calendar(times, spec, timezone, symbols).T)
    columns += [frame[c].to_numpy(np.float64) for c in spec.known_columns]
    return Features(inputs=np.stack(columns, axis=1), num_observed=num_observed, returns=returns)
