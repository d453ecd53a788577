"""Bars that outgrow one file: a folder or glob of Parquet files read as one dataset, with
time and symbol filters pushed down to the reader.

Vendors ship bars one file per day or per contract. `read_source` takes a single file (Parquet
or CSV), a folder (every .parquet/.pq file under it) or a glob ("bars/2026-*.parquet") and
returns the same normalized frame `data/io.py` does. `RowFilter`'s bounds and symbols become
`pyarrow.dataset` filter expressions on Parquet input, so rows outside them are never turned
into pandas objects (row groups wholly outside them are not even decoded); a CSV file, or a
time column that is not stored as a Parquet timestamp, is filtered after it is read, with the
same semantics: `start` inclusive, `end` exclusive, `symbols` exact names.
"""

from __future__ import annotations

import glob
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from foxhunt.data.config import DEFAULT_TIMEZONE, TIMESTAMP_CANDIDATES, parse_bound
from foxhunt.data.io import PARQUET_SUFFIXES, normalize_frame, read_normalized
from foxhunt.errors import DataError
from foxhunt.input_path import check_readable_file

GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, kw_only=True)
class RowFilter:
    """Which bars to read.

    Attributes:
        start: first time kept (inclusive); None = from the first bar.
        end: first time dropped (exclusive); None = to the last bar.
        symbols: instruments kept (exact names); empty = all.
    """

    start: pd.Timestamp | None = None
    end: pd.Timestamp | None = None
    symbols: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.start is None and self.end is None and not self.symbols

    def describe(self) -> str:
        return f"start={self.start}, end={self.end}, symbols={list(self.symbols)}"


def row_filter(
    start: str | None, end: str | None, symbols: tuple[str, ...], timezone: str | None
) -> RowFilter:
    """The filter of `DataConfig.start` / `end` / `symbols` (checked by DataConfig)."""
    return RowFilter(
        start=parse_bound(start, timezone, "start"),
        end=parse_bound(end, timezone, "end"),
        symbols=tuple(symbols),
    )


def is_glob(path: str | Path) -> bool:
    return bool(GLOB_CHARS & set(str(path)))


def source_files(path: str | Path) -> list[Path]:
    """The files behind `path`: itself, the Parquet files of a folder (recursively), or a
    glob's matches, sorted; DataError naming the path when there are none."""
    text = str(path)
    if is_glob(text):
        files = sorted(Path(p) for p in glob.glob(text, recursive=True) if os.path.isfile(p))
        if not files:
            raise DataError(f"{text}: the glob matches no file; check the pattern (quote it)")
        return files
    folder = Path(text)
    if folder.is_dir():
        files = sorted(
            p
            for p in folder.rglob("*")
            if p.is_file() and p.name.lower().endswith(PARQUET_SUFFIXES)
        )
        if not files:
            raise DataError(
                f"{folder}: data file is a folder holding no .parquet/.pq file; pass a bars "
                "file or a folder of Parquet bars"
            )
        return files
    check_readable_file(folder)
    return [folder]


def fingerprint_files(path: Path) -> dict[str, Any]:
    """Identity of a folder or glob's content: every file's name, size and modification time
    (hashing gigabytes of bars at each resume would cost minutes)."""
    files = source_files(path)
    digest = hashlib.sha256()
    size = 0
    for file in files:
        info = file.stat()
        size += info.st_size
        digest.update(f"{file.name}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return {"bytes": size, "files": len(files), "sha256": digest.hexdigest(), "hashed": "stat"}


def _dataset(files: list[Path], source: str) -> pads.Dataset:
    for file in files:
        check_readable_file(file)
    try:
        return pads.dataset([str(f) for f in files], format="parquet")
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise DataError(f"{source}: cannot read as Parquet ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _schema(file: Path) -> pa.Schema:
    """The file's columns and types, from its footer alone (no row is read)."""
    try:
        return pq.read_schema(file).remove_metadata()
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{file}: not a Parquet file ({_first_line(exc)})") from None


def _check_schemas(files: list[Path], source: str) -> None:
    """Every file has the columns and types of the first one (a vendor changing a type, or
    a file of another product, is named rather than silently cast or dropped)."""
    first = _schema(files[0])
    for file in files[1:]:
        schema = _schema(file)
        if not schema.equals(first):
            mine = {f.name: str(f.type) for f in schema}
            theirs = {f.name: str(f.type) for f in first}
            diff = sorted(
                f"{k}: {theirs.get(k, 'absent')} vs {mine.get(k, 'absent')}"
                for k in set(mine) | set(theirs)
                if mine.get(k) != theirs.get(k)
            )
            raise DataError(
                f"{file}: its columns differ from {files[0].name}'s ({'; '.join(diff)}) in "
                f"{source}; give every file the same columns and types"
            )


def _timestamp_field(schema: pa.Schema, wanted: str | None) -> str | None:
    """The Parquet timestamp column the filter can use, as normalize_frame would find it."""
    names = {f.name.lower().strip(): f.name for f in schema}
    name = wanted if wanted in schema.names else None
    if wanted is None:
        name = next((names[c] for c in TIMESTAMP_CANDIDATES if c in names), None)
    if name is None or not pa.types.is_timestamp(schema.field(name).type):
        return None
    return name


def _time_scalar(bound: pd.Timestamp, kind: pa.TimestampType, timezone: str | None) -> pa.Scalar:
    """`bound` as a scalar comparable with a column of type `kind` (naive columns hold local
    times of `timezone`, as normalize_timestamps reads them)."""
    if kind.tz is None:
        local = bound.tz_convert(timezone or DEFAULT_TIMEZONE).tz_localize(None)
        return pa.scalar(local.as_unit("ns").to_datetime64(), type=pa.timestamp("ns"))
    return pa.scalar(bound.value, type=pa.timestamp("ns", tz="UTC"))


def _expression(
    schema: pa.Schema, bounds: RowFilter, ts: str | None, symbol_column: str, timezone: str | None
) -> tuple[pads.Expression | None, RowFilter]:
    """The pushed-down filter, and what is left to filter after reading."""
    expr: pads.Expression | None = None
    left = bounds
    if ts is not None and (bounds.start is not None or bounds.end is not None):
        kind = schema.field(ts).type
        column = pads.field(ts)
        if kind.tz is not None:
            column = column.cast(pa.timestamp("ns", tz="UTC"))
        if bounds.start is not None:
            expr = column >= _time_scalar(bounds.start, kind, timezone)
        if bounds.end is not None:
            upper = column < _time_scalar(bounds.end, kind, timezone)
            expr = upper if expr is None else expr & upper
        left = RowFilter(symbols=bounds.symbols)
    if bounds.symbols and symbol_column in schema.names:
        kind = schema.field(symbol_column).type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            names = pads.field(symbol_column).isin(pa.array(bounds.symbols, type=kind))
            expr = names if expr is None else expr & names
            left = RowFilter(start=left.start, end=left.end)
    return expr, left


def apply_filter(frame: pd.DataFrame, bounds: RowFilter) -> pd.DataFrame:
    """`bounds` on a normalized frame (pandas, after reading): the reference semantics."""
    if bounds.empty:
        return frame
    keep = np.ones(len(frame), dtype=bool)
    times = frame["timestamp"]
    if bounds.start is not None:
        keep &= (times >= bounds.start).to_numpy()
    if bounds.end is not None:
        keep &= (times < bounds.end).to_numpy()
    if bounds.symbols:
        keep &= frame["symbol"].isin(bounds.symbols).to_numpy()
    if keep.all():
        return frame
    out = frame.loc[keep].reset_index(drop=True)
    out.attrs = dict(frame.attrs)
    return out


def _check_not_empty(frame: pd.DataFrame, bounds: RowFilter, source: str) -> None:
    if len(frame) == 0 and not bounds.empty:
        raise DataError(
            f"{source}: no bar passes the filter ({bounds.describe()}); widen --start/--end "
            "or check the --symbols names"
        )


def parquet_filter(
    path: str | Path,
    *,
    timezone: str | None,
    timestamp_column: str | None,
    symbol_column: str,
    bounds: RowFilter,
) -> tuple[pads.Dataset, pads.Expression | None, RowFilter] | None:
    """The Parquet dataset behind `path`, the filter `read_source` pushes down to it and what
    it leaves to filter after reading; None for a CSV file."""
    files = source_files(path)
    if not files[0].name.lower().endswith(PARQUET_SUFFIXES):
        return None
    if len(files) > 1:
        _check_schemas(files, str(path))
    dataset = _dataset(files, str(path))
    ts = _timestamp_field(dataset.schema, timestamp_column)
    expr, left = _expression(dataset.schema, bounds, ts, symbol_column, timezone)
    return dataset, expr, left


def read_source(
    path: str | Path,
    *,
    timezone: str | None = None,
    timestamp_column: str | None = None,
    symbol_column: str = "symbol",
    bounds: RowFilter | None = None,
    only: pads.Expression | None = None,
) -> pd.DataFrame:
    """The bars of a file, folder or glob, normalized (not yet validated) and filtered;
    `only`: a Parquet filter on the stored columns too (data/symbol_reader.py: one symbol)."""
    bounds = bounds or RowFilter()
    source = str(path)
    files = source_files(path)
    kwargs: dict[str, Any] = {
        "timezone": timezone,
        "timestamp_column": timestamp_column,
        "symbol_column": symbol_column,
    }
    one_file = len(files) == 1 and not is_glob(path) and not Path(path).is_dir()
    csv = not files[0].name.lower().endswith(PARQUET_SUFFIXES)
    # the reader of one file, filtered after reading
    if one_file and ((bounds.empty and only is None) or csv):
        frame = apply_filter(read_normalized(files[0], **kwargs), bounds)
        _check_not_empty(frame, bounds, source)
        return frame
    if len(files) > 1:
        _check_schemas(files, source)
    dataset = _dataset(files, source)
    ts = _timestamp_field(dataset.schema, timestamp_column)
    expr, left = _expression(dataset.schema, bounds, ts, symbol_column, timezone)
    if only is not None:
        expr = only if expr is None else expr & only
    try:
        table = dataset.to_table(filter=expr)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
        raise DataError(f"{source}: cannot read ({_first_line(exc)})") from None
    raw = table.to_pandas()
    if isinstance(raw.index, pd.DatetimeIndex):
        raw = raw.reset_index()
    frame = apply_filter(normalize_frame(raw, source=source, **kwargs), left)
    _check_not_empty(frame, bounds, source)
    return frame
