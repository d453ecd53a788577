"""compute_features: a validated frame's inputs, today's set then the chosen groups'."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import cast

import numpy as np
import pandas as pd

from foxhunt.data.features.bars import Bars, OtherSymbols, session_gap, session_numbers
from foxhunt.data.features.base import Features, base_columns, log_returns
from foxhunt.data.features.expiry import check_contracts
from foxhunt.data.features.group import Fill
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
    bars = replace(make_bars(frame, spec, timezone, series, returns), others=others)
    check_cross(bars.symbols if others is None else np.asarray(others.names), spec)
    full = replace(spec, dropped=())
    names = (*full.observed_names, *full.known_names)
    inputs = np.empty((len(returns), len(names)), dtype=np.float32)
    base = base_columns(frame, returns, spec.volatility_windows, series)
    j = len(base)
    write_columns(inputs[:, :j], base)
    del base
    slots = []  # each group's columns of the matrix
    for group, windows in spec.observed_groups:
        width = len(group.columns(windows))
        slots.append((cast("Fill", group.compute), windows, inputs[:, j : j + width]))
        j += width
    with ThreadPoolExecutor(GROUP_THREADS) as pool:  # disjoint columns: the same numbers
        for done in [pool.submit(fill, bars, windows, out) for fill, windows, out in slots]:
            done.result()  # a group's error, raised here
    for name in spec.observed_columns:
        inputs[:, j], j = frame[name].to_numpy(np.float64), j + 1
    times, symbols = pd.DatetimeIndex(frame["timestamp"]), frame["symbol"].to_numpy()
    known = known_calendar(times, full, timezone, symbols, row_contracts(frame, spec))
    write_columns(inputs[:, j : j + known.shape[1]], list(known.T))
    j += known.shape[1]
    for name in spec.known_columns:
        inputs[:, j], j = frame[name].to_numpy(np.float64), j + 1
    keep = np.asarray([n not in spec.dropped for n in names])
    return compact_columns(inputs, keep), int(keep[: len(full.observed_names)].sum())


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
