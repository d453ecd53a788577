"""Bars read a symbol at a time (issue 41): the streamed preparation (streamed.py) never
holds the whole raw frame.

From Parquet (a file, a folder or a glob) with a symbol column, the distinct symbols are
listed from that column alone, a batch at a time, then each symbol's bars are read with the
symbol pushed down as a filter (`sources.read_source`'s `only`, beside the time and symbol
filters of `DataConfig`): row groups of other symbols are skipped by their statistics, the
rest decoded a batch at a time and filtered. Each chunk is normalized by the same code as
the whole frame. A CSV file, the built-in bars, a file without a symbol column or a time
column that is not a Parquet timestamp while --start/--end filter it are read whole, as
one chunk (`pipeline.load_frame`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from foxhunt.data.config import DataConfig
from foxhunt.data.pipeline import load_frame
from foxhunt.data.sources import parquet_filter, read_source, row_filter
from foxhunt.errors import DataError


def symbol_chunks(config: DataConfig) -> Iterator[pd.DataFrame]:
    """The configured bars, normalized and filtered (not yet validated), in chunks that each
    hold every bar of their symbols: one symbol a chunk where the source allows it, else the
    whole frame as one chunk."""
    bounds = row_filter(config.start, config.end, config.symbols, config.timezone)
    found = None
    if config.path is not None:
        found = parquet_filter(
            config.path,
            timezone=config.timezone,
            timestamp_column=config.timestamp_column,
            symbol_column=config.symbol_column,
            bounds=bounds,
        )
    if found is None:
        yield load_frame(config)
        return
    dataset, expr, left = found
    column = config.symbol_column
    after = left.start is not None or left.end is not None  # times filtered after reading
    values = [] if after else _symbol_values(dataset, expr, column, config)
    if not values:  # no symbol column, times filtered after reading, or no bar: read whole
        yield load_frame(config)
        return
    kind = dataset.schema.field(column).type
    field = pads.field(column)
    if pa.types.is_dictionary(kind):
        field, kind = field.cast(kind.value_type), kind.value_type
    for value in values:
        yield read_source(
            config.path,  # type: ignore[arg-type]  # not None: found above
            timezone=config.timezone,
            timestamp_column=config.timestamp_column,
            symbol_column=column,
            bounds=bounds,
            only=field == pa.scalar(value, type=kind),
        )


def _symbol_values(
    dataset: pads.Dataset, expr: pads.Expression | None, column: str, config: DataConfig
) -> list[Any]:
    """The distinct stored values of the symbol column among the rows `expr` keeps, sorted by
    the names they become (`normalize_frame`: str); [] without that column. An empty symbol
    is refused as `normalize_frame` refuses it, naming its row among the rows read."""
    if column not in dataset.schema.names:
        return []
    values: set[Any] = set()
    row, first, missing = 0, -1, 0
    scanner = dataset.scanner(columns=[column], filter=expr)
    try:
        for batch in scanner.to_batches():
            array = batch.column(0)
            if pa.types.is_dictionary(array.type):
                array = array.dictionary_decode()
            if array.null_count:
                if first < 0:
                    first = row + pc.index(pc.is_null(array), True).as_py()
                missing += array.null_count
            values.update(pc.unique(array.drop_null()).to_pylist())
            row += len(array)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
        raise DataError(f"{config.path}: cannot read ({str(exc).splitlines()[0]})") from None
    if missing:
        raise DataError(
            f"{config.path}: column {column!r} is empty at row {first} ({missing} rows); give "
            "every bar its symbol or drop those rows"
        )
    wanted = set(config.symbols)
    return sorted((v for v in values if not wanted or str(v) in wanted), key=str)
