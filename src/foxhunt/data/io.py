"""Reading bars files (Parquet or CSV) into one normalized, validated frame."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from datetime import tzinfo
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from foxhunt.data.config import DEFAULT_TIMEZONE, TIMESTAMP_CANDIDATES
from foxhunt.data.validate import PRICE_VOLUME, validate_bars
from foxhunt.errors import DataError
from foxhunt.input_path import check_readable_file

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".csv.gz")


def _read_raw(path: Path) -> pd.DataFrame:
    name = path.name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        kind = "parquet"
    elif name.endswith(CSV_SUFFIXES):
        kind = "csv"
    else:
        with path.open("rb") as f:
            kind = "parquet" if f.read(4) == b"PAR1" else "csv"
    try:
        # through a Python handle: pandas/pyarrow cannot open a path that is not UTF-8
        with path.open("rb") as handle:
            if kind == "parquet":
                frame = pd.read_parquet(handle)
                if isinstance(frame.index, pd.DatetimeIndex):  # time kept as the index
                    frame = frame.reset_index()
                return frame
            # a handle hides the suffix pandas infers compression from (.csv.gz)
            return pd.read_csv(handle, compression="gzip" if name.endswith(".gz") else None)
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(
            f"{path}: not a Parquet/CSV file ({detail}); pass OHLCV bars as .parquet or .csv"
        ) from None


def _find_timestamp_column(frame: pd.DataFrame, wanted: str | None, source: str) -> str:
    columns = [str(c) for c in frame.columns]
    if wanted is not None:
        if wanted in columns:
            return wanted
        raise DataError(
            f"{source}: timestamp column {wanted!r} not found; columns found: {columns}; "
            "fix --timestamp-column / DataConfig.timestamp_column"
        )
    lower = {c.lower().strip(): c for c in columns}
    for candidate in TIMESTAMP_CANDIDATES:
        if candidate in lower:
            return lower[candidate]
    separator = next((c for c in ";\t|" if len(columns) == 1 and c in columns[0]), None)
    if separator is not None:  # one column whose name holds the real header
        raise DataError(
            f"{source}: one column {columns[0][:60]!r}: the file looks {separator!r}-separated; "
            "save it as comma-separated CSV (or Parquet)"
        )
    raise DataError(
        f"{source}: no timestamp column (looked for {list(TIMESTAMP_CANDIDATES)}); columns "
        f"found: {columns}; name it with --timestamp-column / DataConfig.timestamp_column"
    )


def _parse_times(values: pd.Series, column: str, source: str) -> tuple[pd.Series, bool]:
    """Datetimes, and whether they came from text with UTC offsets but no zone name."""
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return values, False
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values):
        # Epoch numbers are UTC; their magnitude tells the unit (seconds .. nanoseconds).
        magnitude = float(np.nanmax(np.abs(values.to_numpy(dtype=np.float64)), initial=0.0))
        units: list[tuple[float, Literal["ns", "us", "ms", "s"]]]
        units = [(1e17, "ns"), (1e14, "us"), (1e11, "ms"), (-1.0, "s")]
        unit = next(u for bound, u in units if magnitude > bound)
        return pd.to_datetime(values, unit=unit, utc=True), False
    try:
        parsed = pd.to_datetime(values)
        tz = parsed.dt.tz
        return parsed, tz is not None and tz.utcoffset(None) != dt.timedelta(0)
    except (ValueError, TypeError, OverflowError):
        pass
    try:  # mixed UTC offsets (text spanning a DST change) only parse as UTC
        return pd.to_datetime(values, utc=True), True
    except (ValueError, TypeError, OverflowError):
        pass
    parsed = pd.to_datetime(values, utc=True, errors="coerce", format="mixed")
    bad = parsed.isna() & values.notna()
    first = int(np.flatnonzero(bad.to_numpy())[0]) if bad.any() else 0
    raise DataError(
        f"{source}: column {column!r} has values that are not timestamps (row {first}: "
        f"{values.iloc[first]!r}); use ISO times such as 2026-03-09 09:30:00"
    )


def timezone_name(tz: tzinfo) -> str:
    """An IANA name for `tz`; a fixed UTC offset becomes Etc/GMT+h (or UTC if not whole hours)."""
    key = getattr(tz, "key", None) or getattr(tz, "zone", None)
    if isinstance(key, str):
        return key
    offset = tz.utcoffset(None)
    if offset is None or offset == dt.timedelta(0):
        return "UTC"
    hours, rest = divmod(offset, dt.timedelta(hours=1))
    return f"Etc/GMT{-hours:+d}" if not rest else "UTC"


def normalize_timestamps(
    times: pd.Series, *, timezone: str | None, column: str, source: str
) -> pd.Series:
    """tz-aware timestamps: naive ones localized to `timezone`, aware ones converted to it.

    Without `timezone`, naive times are read as America/New_York (exchange time), times with
    a zone keep it, and text with bare UTC offsets ("-05:00"), which carries no DST rules, is
    converted to America/New_York.
    """
    times, offsets_only = _parse_times(times, column, source)
    if times.isna().any():
        row = int(np.flatnonzero(times.isna().to_numpy())[0])
        raise DataError(f"{source}: column {column!r} is empty at row {row}; drop that row")
    tz = times.dt.tz
    if tz is not None:
        default = DEFAULT_TIMEZONE if offsets_only else timezone_name(tz)
        return times.dt.tz_convert(timezone or default).dt.as_unit("ns")
    target = timezone or DEFAULT_TIMEZONE
    try:
        local = times.dt.tz_localize(target, ambiguous="raise", nonexistent="raise")
        return local.dt.as_unit("ns")
    except (ValueError, zoneinfo.ZoneInfoNotFoundError) as exc:
        raise DataError(
            f"{source}: naive times in column {column!r} cannot be read as {target} ({exc}); "
            "store tz-aware or UTC timestamps, or pass the right --timezone"
        ) from None


def normalize_frame(
    frame: pd.DataFrame,
    *,
    source: str,
    timezone: str | None = None,
    timestamp_column: str | None = None,
    symbol_column: str = "symbol",
) -> pd.DataFrame:
    """Rename and order columns: timestamp, open, high, low, close, volume, symbol, extras."""
    ts_column = _find_timestamp_column(frame, timestamp_column, source)
    _check_names(frame, ts_column, source)
    out = frame.copy(deep=False)  # copy-on-write: the caller's frame is never modified
    out.columns = [str(c) for c in out.columns]
    renames: dict[str, str] = {}
    lower = {c.lower().strip(): c for c in out.columns}
    for name in PRICE_VOLUME:  # "Close", " close " -> "close"
        if name not in out.columns and name in lower:
            renames[lower[name]] = name
    out = out.rename(columns=renames)
    times = normalize_timestamps(out[ts_column], timezone=timezone, column=ts_column, source=source)
    symbols: pd.Series | str = "default"
    if symbol_column in out.columns:
        missing = out[symbol_column].isna().to_numpy()
        if missing.any():  # astype(str) kept them as NaN floats, which broke sorting later
            row = int(np.flatnonzero(missing)[0])
            raise DataError(
                f"{source}: column {symbol_column!r} is empty at row {row} "
                f"({int(missing.sum())} rows); give every bar its symbol or drop those rows"
            )
        symbols = out[symbol_column].astype(str)
    out = out.drop(columns=[c for c in (ts_column, symbol_column, "symbol") if c in out.columns])
    out.insert(0, "timestamp", times)
    out["symbol"] = symbols
    front = ["timestamp", *[c for c in PRICE_VOLUME if c in out.columns], "symbol"]
    out = out[front + [c for c in out.columns if c not in front]]
    out.attrs["source"] = source
    return out


def _check_names(frame: pd.DataFrame, ts_column: str, source: str) -> None:
    """The bar times become column "timestamp": a price column taken as the times, or
    another column already called "timestamp", was an internal error."""
    names = [str(c) for c in frame.columns]
    if ts_column.lower().strip() in PRICE_VOLUME:
        raise DataError(
            f"{source}: --timestamp-column {ts_column} is a price or volume column; name the "
            "column holding the bar times"
        )
    if ts_column != "timestamp" and "timestamp" in names:
        raise DataError(
            f"{source}: the times are read from column {ts_column!r}, and another column is "
            "called 'timestamp', the name foxhunt gives the times; drop or rename one of them"
        )


def read_normalized(
    path: str | Path,
    *,
    timezone: str | None = None,
    timestamp_column: str | None = None,
    symbol_column: str = "symbol",
) -> pd.DataFrame:
    """`read_bars` without the validation (for callers that validate with their own limits)."""
    path = Path(path)
    check_readable_file(path)  # names a folder, FIFO or symlink loop as what it is
    return normalize_frame(
        _read_raw(path),
        source=str(path),
        timezone=timezone,
        timestamp_column=timestamp_column,
        symbol_column=symbol_column,
    )


def read_bars(
    path: str | Path,
    *,
    timezone: str | None = None,
    timestamp_column: str | None = None,
    symbol_column: str = "symbol",
) -> pd.DataFrame:
    """Read and validate a Parquet (.parquet, .pq) or CSV (.csv, .csv.gz) bars file.

    Returns columns timestamp (tz-aware; naive ones are localized to `timezone`, default
    America/New_York), open, high, low, close, volume (float64), symbol ("default" when the
    file has none), then any extra columns, sorted by symbol and time.
    """
    frame = read_normalized(
        path, timezone=timezone, timestamp_column=timestamp_column, symbol_column=symbol_column
    )
    return validate_bars(frame, source=str(path), min_rows=1)
