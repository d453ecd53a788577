"""A planted market on disk: its bars as Parquet, and beside them what made them.

`write_planted` writes ``NAME.parquet`` and ``NAME.parquet.planted.json`` (the config and the
Parquet file's SHA-256). `planted_config_of(path)` reads the config back for a bars file
whose bytes are still the generator's, so a run on it can score the oracle; an edited file
gets no oracle (its bars are no longer the generator's), with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from foxhunt.data.planted.config import PlantedConfig
from foxhunt.data.planted.generate import PlantedBars
from foxhunt.errors import DataError
from foxhunt.storage import atomic_write_bytes

log = logging.getLogger("foxhunt.data")
SIDECAR_SUFFIX = ".planted.json"


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_planted(bars: PlantedBars, path: Path) -> Path:
    """The bars as Parquet at `path` and the config beside them; returns the sidecar."""
    import io

    buffer = io.BytesIO()
    bars.frame.to_parquet(buffer, index=False)
    atomic_write_bytes(path, buffer.getvalue())
    record = {"planted": bars.config.to_dict(), "sha256": _sha256(path)}
    side = sidecar_path(path)
    atomic_write_bytes(side, (json.dumps(record, indent=1) + "\n").encode())
    return side


def planted_config_of(path: Path | str | None) -> PlantedConfig | None:
    """The config that generated the bars file `path`, or None (no sidecar, a folder, a
    glob, or a file changed since it was written: warned)."""
    if path is None:
        return None
    path = Path(path)
    side = sidecar_path(path)
    if not path.is_file() or not side.is_file():
        return None
    try:
        record = json.loads(side.read_text())
        config = PlantedConfig.from_dict(record["planted"])
        expected = str(record["sha256"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(f"{side}: not a planted market's record ({err}); delete it") from None
    if _sha256(path) != expected:
        log.warning("%s changed since the planted market wrote it: no oracle for it", path)
        return None
    return config
