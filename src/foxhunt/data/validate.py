"""Checks on a bars frame: each problem is one DataError naming the column, row and time."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from foxhunt.data.contracts import check_interleaved, contract_order
from foxhunt.errors import DataError

log = logging.getLogger("foxhunt.data")

PRICE_VOLUME = ("open", "high", "low", "close", "volume")
REQUIRED = ("timestamp", *PRICE_VOLUME)
#: no bars of an electronic futures market come from before this (1971-01-01 UTC)
EARLIEST_NS = pd.Timestamp("1971-01-01", tz="UTC").value


def _where(frame: pd.DataFrame, row: int) -> str:
    """`row 12 (2026-03-09 09:30:00-04:00, symbol 'ES')` for messages; row is 0-based."""
    return f"row {row} ({frame['timestamp'].iloc[row]}, symbol {frame['symbol'].iloc[row]!r})"


def _as_float(frame: pd.DataFrame, column: str, source: str) -> np.ndarray:
    values = frame[column]
    if pd.api.types.is_numeric_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    coerced = pd.to_numeric(values, errors="coerce")
    bad = np.flatnonzero((coerced.isna() & values.notna()).to_numpy())
    if len(bad):
        row = int(bad[0])
        raise DataError(
            f"{source}: column {column!r} is not numeric (dtype {values.dtype}; {_where(frame, row)}"
            f" holds {values.iloc[row]!r}); fix or drop the non-numeric values"
        )
    return coerced.to_numpy(dtype=np.float64, na_value=np.nan)


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


def _check_values(frame: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    values = {c: _as_float(frame, c, source) for c in columns}
    for column, v in values.items():
        row = _first(~np.isfinite(v))
        if row is not None:
            raise DataError(
                f"{source}: column {column!r} has a missing or infinite value ({v[row]}) at "
                f"{_where(frame, row)}; fill or drop those bars"
            )
    if "high" in values and "low" in values:
        row = _first(values["high"] < values["low"])
        if row is not None:
            raise DataError(
                f"{source}: high < low at {_where(frame, row)} (high {values['high'][row]}, "
                f"low {values['low'][row]}); fix or drop the bar"
            )
        for column in ("open", "close"):  # a bar that contradicts itself (issue 16)
            if column not in values:
                continue
            price = values[column]
            row = _first((price > values["high"]) | (price < values["low"]))
            if row is not None:
                raise DataError(
                    f"{source}: column {column!r} lies outside [low, high] at "
                    f"{_where(frame, row)} ({column} {price[row]}, low {values['low'][row]}, "
                    f"high {values['high'][row]}); fix or drop the bar"
                )
    for column in ("open", "high", "low", "close"):
        row = _first(values[column] <= 0) if column in values else None
        if row is not None:
            raise DataError(
                f"{source}: column {column!r} is not positive ({values[column][row]}) at "
                f"{_where(frame, row)}; prices must be > 0 (log returns)"
            )
    if "volume" in values:
        row = _first(values["volume"] < 0)
        if row is not None:
            raise DataError(
                f"{source}: column 'volume' is negative ({values['volume'][row]}) at "
                f"{_where(frame, row)}; volumes must be >= 0"
            )
    for column, v in values.items():
        frame[column] = v


def _check_era(frame: pd.DataFrame, source: str) -> None:
    """Times before 1971 are numbers read as Unix epoch seconds: Excel serial dates
    (45678.5 = 2025-01-22 12:00) became 1970-01-01 12:41:18 and trained with exit 0."""
    ns = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8  # naive: wall time as UTC
    row = _first(ns < EARLIEST_NS)
    if row is not None:
        raise DataError(
            f"{source}: column 'timestamp' is before 1971 at {_where(frame, row)}; numbers are "
            "read as Unix epoch times (Excel serial dates are not); store ISO times such as "
            "2026-03-09 09:30:00"
        )


def drop_duplicate_bars(
    frame: pd.DataFrame, source: str, keys: Sequence[str] = ("symbol",)
) -> pd.DataFrame:
    """`frame` less its exact duplicate bars (same `keys`, timestamp and every value), dropped
    with one warning; a bar given twice with different values raises DataError naming the
    file, the symbol and the time (which one was meant cannot be known, issue 42). Every
    reader of bars for a forecast comes here: the bars (`validate_bars`) and the known
    future inputs (data/future.py)."""
    subset = [*keys, "timestamp"]
    frame = frame.reset_index(drop=True)  # labels are positions: the rows named below
    repeated = frame.duplicated(subset, keep=False).to_numpy()
    if not repeated.any():
        return frame
    text = [c for c in frame.columns if frame[c].dtype == object]  # lists are not hashable
    frame_by_value = frame.assign(**{str(c): frame[c].map(repr) for c in text})
    distinct = frame_by_value.loc[repeated].drop_duplicates()  # NaN equals NaN here
    conflict = distinct.duplicated(subset, keep=False).to_numpy()
    if conflict.any():
        clash = distinct.loc[conflict].sort_values("timestamp", kind="stable")
        first = clash.iloc[0]
        same = clash[(clash[subset] == first[subset]).all(axis=1)]
        rows = [int(i) for i in same.index[:2]]
        differ = [str(col) for col in frame.columns if not _same(same[col].iloc[:2])]
        what = ", ".join(f"{k} {first[k]!r}" for k in keys)
        raise DataError(
            f"{source}: two different bars for {what} at {first['timestamp']} (rows {rows[0]} "
            f"and {rows[1]} differ in {differ}); keep one bar per symbol and time"
            + ("" if len(keys) > 1 else " (or name each bar's contract in a contract column)")
        )
    exact = frame_by_value.duplicated(keep="first").to_numpy()
    log.warning(
        "%s: dropped %d exact duplicate bar(s) (same symbol, time and values; first at %s)",
        source,
        int(exact.sum()),
        _where(frame, int(np.flatnonzero(exact)[0])),
    )
    out = frame.loc[~exact].reset_index(drop=True)
    out.attrs = dict(frame.attrs)
    return out


def _same(values: pd.Series) -> bool:
    """Whether the two values are equal (two missing values are)."""
    a, b = values.iloc[0], values.iloc[1]
    return bool(a == b) or bool(pd.isna(a) and pd.isna(b))


def _keys(frame: pd.DataFrame, contract_column: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's series code (symbol, then contract in listing order) and UTC ns time."""
    codes, _ = pd.factorize(frame["symbol"], sort=True)
    if contract_column is not None:  # one series per (symbol, contract): combine the keys
        codes = codes * (len(frame) + 1) + contract_order(frame, contract_column)
    return codes, pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8


def _sort(frame: pd.DataFrame, source: str, contract_column: str | None) -> pd.DataFrame:
    """Rows by symbol, then contract (in listing order) when `contract_column`, then time;
    exact duplicate bars dropped, conflicting ones refused (`drop_duplicate_bars`)."""
    codes, times = _keys(frame, contract_column)
    order = np.lexsort((times, codes))
    c, t = codes[order], times[order]
    if ((c[1:] == c[:-1]) & (t[1:] == t[:-1])).any():  # only then the slower check by value
        keys = ("symbol",) if contract_column is None else ("symbol", contract_column)
        frame = drop_duplicate_bars(frame, source, keys)
        codes, times = _keys(frame, contract_column)
        order = np.lexsort((times, codes))
    by_symbol = np.argsort(codes, kind="stable")
    c, t = codes[by_symbol], times[by_symbol]
    row = _first((c[1:] == c[:-1]) & (t[1:] < t[:-1]))
    if row is not None:
        bad = int(by_symbol[row + 1])
        log.warning(
            "%s: rows are not in time order (first at %s); sorted them by symbol and time",
            source,
            _where(frame, bad),
        )
    if np.array_equal(order, np.arange(len(order))):
        return frame.reset_index(drop=True)
    return frame.take(order).reset_index(drop=True)


def validate_bars(
    df: pd.DataFrame,
    *,
    source: str,
    min_rows: int,
    extra_columns: Sequence[str] = (),
    contract_column: str | None = None,
) -> pd.DataFrame:
    """A checked copy of `df`, sorted by symbol and time; `df` itself is never modified.

    Expects columns timestamp (datetime), open, high, low, close, volume and optionally
    symbol (added as "default") and `extra_columns` (numeric inputs the config asks for).
    Raises DataError for missing or non-numeric columns, NaN/inf, high < low, open or close
    outside [low, high], negative volume, a bar given twice with different values (same
    symbol and time) and symbols with fewer than `min_rows` bars; exact duplicate bars are
    dropped with a warning.
    Rows out of time order are sorted, with a warning on the "foxhunt.data" logger. With
    `contract_column`, each contract of a symbol is its own series (data/contracts.py): rows
    are sorted by symbol, contract and time; times may repeat across contracts, but contracts
    taking turns bar after bar are refused (`check_interleaved`)."""
    columns = [str(c) for c in df.columns]
    missing = [c for c in (*REQUIRED, *extra_columns) if c not in columns]
    if missing:
        raise DataError(
            f"{source}: missing column(s) {missing}; columns found: {columns}; bars need "
            "timestamp, open, high, low, close, volume (symbol optional)"
        )
    if not pd.api.types.is_datetime64_any_dtype(df["timestamp"].dtype):
        raise DataError(
            f"{source}: column 'timestamp' holds {df['timestamp'].dtype}, not datetimes; "
            "read files with foxhunt.data.read_bars"
        )
    if len(df) == 0:  # a header-only file: no symbol is "short", yet nothing can be fitted
        raise DataError(f"{source}: no bars (the file holds only a header); pass OHLCV bars")
    frame = df.copy(deep=False)  # copy-on-write (pandas 3): writes never reach `df`
    frame["symbol"] = frame["symbol"].astype(str) if "symbol" in columns else "default"
    if frame["timestamp"].isna().any():
        row = int(np.flatnonzero(frame["timestamp"].isna().to_numpy())[0])
        raise DataError(f"{source}: column 'timestamp' is empty at row {row}; drop that row")
    _check_era(frame, source)
    _check_values(frame, (*PRICE_VOLUME, *extra_columns), source)
    if contract_column is not None and frame[contract_column].isna().any():
        row = int(np.flatnonzero(frame[contract_column].isna().to_numpy())[0])
        raise DataError(
            f"{source}: column {contract_column!r} is empty at {_where(frame, row)}; name "
            "every bar's contract"
        )
    frame = _sort(frame, source, contract_column)
    if contract_column is not None:
        check_interleaved(frame, contract_column, source)
    counts = frame["symbol"].value_counts(sort=False)
    short = counts[counts < min_rows]
    if len(short):
        found = ", ".join(f"{s!r}: {n}" for s, n in short.items())
        raise DataError(
            f"{source}: too few bars: {min_rows} per symbol are needed (lookback + horizon), "
            f"found {found}; use a longer file or a smaller lookback/horizon"
        )
    frame.attrs["source"] = source
    return frame
