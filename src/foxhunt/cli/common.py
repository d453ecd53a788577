"""Shared by the commands that read bars besides a run: the data flags (`DataConfig`'s
fields, as `foxhunt train` has them) and reading the file they name."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxhunt.cli.generated import Section
from foxhunt.errors import ConfigError, UsageError

if TYPE_CHECKING:  # the readers are imported where used: registering the flags needs none
    import pandas as pd

    from foxhunt.data.config import DataConfig

#: the spellings of `DataConfig.path`, as every command has had them
DATA_FILE = ("--parquet-file", "--csv-file", "--data-file")
#: `DataConfig`'s fields that say which bars of a file to read
READ_FIELDS = ("path", "timezone", "timestamp_column", "start", "end", "symbols")


def run_store_data(run: DataConfig, given: DataConfig) -> DataConfig | None:
    """A saved run's data settings with the bars a command was given (``READ_FIELDS``; a
    timezone not given is the run's): the feature store key of those bars under the run.
    None when the run has no store or the file is not the one it was trained from (then
    nothing is hashed: new bars are the usual case for `predict`)."""
    if run.feature_store is None or run.path is None or given.path is None:
        return None
    if Path(given.path).resolve() != Path(run.path).resolve():
        return None
    fields = {name: getattr(given, name) for name in READ_FIELDS}
    return replace(run, **{k: v for k, v in fields.items() if k != "timezone" or v is not None})


def data_section(*names: str) -> Section:
    """The data flags of a command: `DataConfig`'s fields ``names`` (all but the split if
    none), ``path`` spelled as ``--parquet-file`` / ``--csv-file`` / ``--data-file``."""
    from foxhunt.data.config import DataConfig  # pandas: imported by a command's parse only

    return Section("data", DataConfig, exclude=("split",), only=names, aliases={"path": DATA_FILE})


def read_frame(data: Any, preprocessor_timezone: str | None = None) -> pd.DataFrame:
    """The bars the data section (``READ_FIELDS``) names; a naive timestamp is read in the
    section's timezone, else the run's."""
    if data.path is None:
        raise UsageError("pass the bars to use with --parquet-file FILE")
    from foxhunt.data.sources import read_source, row_filter

    timezone = data.timezone or preprocessor_timezone
    try:
        bounds = row_filter(data.start, data.end, tuple(data.symbols), timezone)
    except ConfigError as exc:  # name the flag, not the config field
        raise ConfigError(str(exc).replace("DataConfig.", "--")) from None
    # validated once, by the run's preprocessor (with the window's row minimum)
    return read_source(
        data.path, timezone=timezone, timestamp_column=data.timestamp_column, bounds=bounds
    )
