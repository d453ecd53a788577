"""The checkpoint storage interface and the manifest that makes a checkpoint trustworthy.

A checkpoint is a named set of files. Its manifest (written last) lists every file with its
size and SHA-256; a checkpoint without a valid manifest is incomplete and never listed, and a
file whose checksum differs is refused with an error naming it, never loaded half.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any, Protocol

from foxhunt.errors import FoxhuntError

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


class CheckpointError(FoxhuntError):
    """A checkpoint is missing, incomplete, corrupted or could not be written."""


class CheckpointStorage(Protocol):
    """Saves and loads named checkpoints atomically. Names sort by age (e.g. step-000123)."""

    def save(self, name: str, files: Mapping[str, bytes]) -> None:
        """Store all files under `name`, all or nothing."""
        ...

    def load(self, name: str) -> dict[str, bytes]:
        """Every file of `name`, checked against its manifest."""
        ...

    def list(self) -> list[str]:
        """Names of the complete checkpoints, oldest first."""
        ...

    def delete(self, name: str) -> None: ...

    def describe(self, name: str) -> str:
        """Where `name` lives, for messages."""
        ...


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_manifest(files: Mapping[str, bytes], metadata: Mapping[str, Any] | None = None) -> bytes:
    if MANIFEST in files:
        raise ValueError(f"{MANIFEST} is reserved for the storage layer")
    manifest = {
        "format": FORMAT_VERSION,
        "created": time.time(),
        "files": {
            name: {"bytes": len(data), "sha256": sha256(data)} for name, data in files.items()
        },
    }
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()


def parse_manifest(raw: bytes, where: str) -> dict[str, Any]:
    try:
        manifest = json.loads(raw)
        files = manifest["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(
            f"{where}/{MANIFEST} is damaged ({exc}); use an older checkpoint"
        ) from exc
    return dict(manifest)


def verify(name: str, where: str, manifest: Mapping[str, Any], data: Mapping[str, bytes]) -> None:
    """Refuse the whole checkpoint if any file is missing, truncated or altered."""
    for file, meta in manifest["files"].items():
        if file not in data:
            raise CheckpointError(f"{where}/{file} is missing; checkpoint {name} is incomplete")
        blob = data[file]
        if len(blob) != meta["bytes"]:
            raise CheckpointError(
                f"{where}/{file} is truncated ({len(blob)} of {meta['bytes']} bytes); "
                f"checkpoint {name} refused, resume from an older one"
            )
        if sha256(blob) != meta["sha256"]:
            raise CheckpointError(
                f"{where}/{file} is corrupted (checksum mismatch); checkpoint {name} refused, "
                "resume from an older one"
            )
