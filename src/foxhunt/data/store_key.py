"""The key of a feature store entry: a hash of everything the prepared inputs depend on.

- the bars' content: every file's SHA-256 (about 0.8 s per GB here). A file's size and
  modification time (`sources.fingerprint_files`, a resume's check) miss a same-size rewrite
  within the clock's resolution and a copy that keeps the old times (`cp -p`, `rsync -a`);
  a stale store would train on the old features silently, so the bytes are read once. The
  synthetic bars are named by their settings (and the code that generates them, below);
- every data setting but those that do not change the prepared arrays (the store's own
  place, the bars' path, which the content replaces, `base`, applied after, and the
  processes preparing it);
- a resumed run's fitted preprocessor (its scalers, not refitted ones, scale the inputs);
- the feature code: the source of every module of `foxhunt.data`, so an upgrade that
  changes how a feature is computed never reads a store made by the old one (a comment
  change costs one rebuild), and the versions of numpy, pandas and pyarrow.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from foxhunt.data.config import DataConfig
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.sources import source_files
from foxhunt.storage.staged import file_sha256

#: the layout of a store entry (data/feature_store.py); a new layout never reads an old one
STORE_FORMAT = 2  # 2: each bar's log range (ranges.npy)
KEY_CHARS = 24  # 96 bits of the SHA-256
#: settings that do not change the prepared arrays
UNKEYED = ("feature_store", "path", "base", "prepare_workers")


def bars_fingerprint(path: Path | None) -> list[list[Any]] | None:
    """[name, bytes, sha256] of each file behind `path` (a file, folder or glob), names
    relative to their folder; None for the synthetic bars."""
    if path is None:
        return None
    files = source_files(path)
    root = path if path.is_dir() else files[0].parent
    out = []
    for file in files:
        name = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
        out.append([name, file.stat().st_size, file_sha256(file)])
    return out


@functools.cache
def code_fingerprint() -> str:
    """SHA-256 of the source of every module of `foxhunt.data` (the feature code)."""
    package = Path(__file__).parent
    digest = hashlib.sha256()
    for file in sorted(package.rglob("*.py")):
        digest.update(file.relative_to(package).as_posix().encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def key_material(config: DataConfig, preprocessor: Preprocessor | None) -> dict[str, Any]:
    """Everything the prepared inputs of `config` depend on, as JSON values."""
    settings = {k: v for k, v in config.to_dict().items() if k not in UNKEYED}
    return {
        "format": STORE_FORMAT,
        "bars": bars_fingerprint(config.path),
        "data": settings,
        "preprocessor": None if preprocessor is None else preprocessor.state_dict(),
        "code": code_fingerprint(),
        "versions": {"numpy": np.__version__, "pandas": pd.__version__, "pyarrow": pa.__version__},
    }


def store_key(material: dict[str, Any]) -> str:
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_CHARS]
