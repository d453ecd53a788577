"""A planted market on disk: its bars as Parquet, and beside them what made them.

`write_planted` writes ``NAME.parquet`` and ``NAME.parquet.planted.json`` (the config and the
Parquet file's SHA-256). `planted_config_of(path)` reads the config back for a bars file
whose bytes are still the generator's, so a run on it can score the oracle; an edited file
gets no oracle (its bars are no longer the generator's), with a warning, and so does a
sidecar whose config makes other bars (`same_bars`, checked where the oracle is scored).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data.planted.config import PlantedConfig
from foxhunt.data.planted.generate import PlantedBars
from foxhunt.errors import DataError
from foxhunt.storage import atomic_write_files

log = logging.getLogger("foxhunt.data")
SIDECAR_SUFFIX = ".planted.json"
MAX_RECORD = 1 << 20  # a record is under a kilobyte; a larger file is not one


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_planted(bars: PlantedBars, path: Path) -> Path:
    """The bars as Parquet at `path` and the config beside them, both written before either
    replaces what was there (a full disk keeps the old pair whole); returns the sidecar."""
    import io

    buffer = io.BytesIO()
    bars.frame.to_parquet(buffer, index=False)
    data = buffer.getvalue()
    record = {"planted": bars.config.to_dict(), "sha256": hashlib.sha256(data).hexdigest()}
    side = sidecar_path(path)
    atomic_write_files({path: data, side: (json.dumps(record, indent=1) + "\n").encode()})
    return side


def read_record(path: Path | str | None) -> tuple[PlantedConfig, str] | None:
    """The config and the bars' SHA-256 that `path`'s sidecar records; None without one (no
    sidecar, a folder, a glob). A damaged sidecar is a DataError naming it: checked before a
    run trains, not when its test split is scored."""
    if path is None:
        return None
    path = Path(path)
    side = sidecar_path(path)
    if not path.is_file() or not side.is_file():
        return None
    try:
        record = json.loads(side.read_bytes()[:MAX_RECORD])
        config = PlantedConfig.from_dict(record["planted"])
        expected = record["sha256"]
        if not isinstance(expected, str):
            raise TypeError(f"sha256 is {expected!r}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise DataError(
            f"{side}: not a planted market's record ({err}); delete it, or write the bars "
            "again with foxhunt planted"
        ) from None
    return config, expected


def planted_config_of(path: Path | str | None) -> PlantedConfig | None:
    """The config that generated the bars file `path`, or None (no sidecar, a folder, a
    glob, or a file changed since it was written: warned)."""
    record = read_record(path)
    if record is None:
        return None
    config, expected = record
    if _sha256(Path(path)) != expected:  # type: ignore[arg-type]
        log.warning("%s changed since the planted market wrote it: no oracle for it", path)
        return None
    return config


def same_bars(made: pd.DataFrame, read: pd.DataFrame) -> bool:
    """Whether the bars read from a file are those a config makes (an edited sidecar whose
    checksum still matches would score an oracle of another market)."""
    if len(made) != len(read) or not set(made.columns) <= set(read.columns):
        return False
    return all(np.array_equal(_values(made[c]), _values(read[c])) for c in made.columns)


def _values(column: pd.Series) -> np.ndarray:
    """A column as values to compare exactly: times as UTC ns, names as text."""
    if column.name == "timestamp":
        return pd.DatetimeIndex(column).tz_convert("UTC").as_unit("ns").asi8
    if column.name == "symbol":
        return column.astype(str).to_numpy()
    return column.to_numpy()
