"""A run's identity: which run, trained on exactly which data, with which configuration.

identity.json in the run folder and every checkpoint's metadata carry it, so a checkpoint
is never resumed (or pruned) by another run (training/checkpoint.py's `check_same_run`),
and `--resume` refuses a data file that changed since training started.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

from foxhunt.data.sources import fingerprint_files, is_glob
from foxhunt.errors import DataError, FoxhuntError
from foxhunt.runs.files import IDENTITY_FILE
from foxhunt.storage import atomic_write_json
from foxhunt.storage.bounded import read_json_bounded
from foxhunt.training.checkpoint import RESUMABLE_CHANGES, flatten

FULL_HASH_LIMIT = 256 << 20  # hashing a whole file this size takes well under a second
EDGE = 1 << 20  # past the limit: the first and last MiB, with the size


def fingerprint(path: Path | None) -> dict[str, Any]:
    """What identifies the data file's content (None: the built-in synthetic bars, which
    the config alone determines)."""
    if path is None:
        return {"synthetic": True}
    if is_glob(path) or os.path.isdir(path):
        return fingerprint_files(path)
    size = os.stat(path).st_size
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        if size <= FULL_HASH_LIMIT:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
            how = "full"
        else:
            digest.update(f.read(EDGE))
            f.seek(size - EDGE)
            digest.update(f.read(EDGE))
            how = "edges"
    return {"bytes": size, "sha256": digest.hexdigest(), "hashed": how}


def config_digest(config: dict[str, Any]) -> str:
    fixed = {k: v for k, v in flatten(config).items() if k not in RESUMABLE_CHANGES}
    return hashlib.sha256(json.dumps(fixed, sort_keys=True, default=str).encode()).hexdigest()


def new_identity(config: dict[str, Any], data_path: Path | None) -> dict[str, Any]:
    return {
        "run_id": uuid.uuid4().hex,
        "config_sha256": config_digest(config),
        "data": fingerprint(data_path),
    }


def write_identity(folder: Path, identity: dict[str, Any]) -> None:
    atomic_write_json(folder / IDENTITY_FILE, identity)


def read_identity(folder: Path) -> dict[str, Any] | None:
    """None for runs written before identities existed."""
    path = folder / IDENTITY_FILE
    if not path.exists():
        return None
    identity = read_json_bounded(path)
    if not (
        isinstance(identity, dict)
        and isinstance(identity.get("run_id"), str)
        and isinstance(identity.get("data"), dict)
    ):
        raise FoxhuntError(f"{path}: expected run_id and data fields; the run folder is damaged")
    return identity


def check_same_data(identity: dict[str, Any], data_path: Path | None) -> None:
    """Refuse to resume on a data file whose content changed since the run started."""
    saved = identity["data"]
    if saved.get("synthetic") and data_path is None:
        return
    current = fingerprint(data_path)
    if current != saved:
        where = data_path if data_path is not None else "the built-in synthetic bars"
        raise DataError(
            f"--resume: {where} is not the data this run was trained on (size or content "
            f"changed: {saved.get('bytes')} -> {current.get('bytes')} bytes); resuming would "
            "mix two datasets; train a new run with --overwrite or another --output-dir"
        )
