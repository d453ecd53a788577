"""The checkpoint storage interface and the manifest that makes a checkpoint trustworthy.

A checkpoint is a named set of files. Its manifest (written last) lists every file with its
size and SHA-256; a checkpoint without a valid manifest is incomplete and never listed, and a
file whose checksum differs is refused with an error naming it, never loaded half.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping
from typing import Any, Protocol

from foxhunt.errors import FoxhuntError

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
MANIFEST_LIMIT = 1 << 20
# weights, best weights and AdamW moments of the largest model this project trains, with room
MAX_CHECKPOINT_BYTES = 64 << 30
SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
HEX64 = re.compile(r"[0-9a-f]{64}")


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

    def clean_partial(self) -> None:
        """Remove what saves killed mid-write left behind (never a complete checkpoint)."""
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
    """The manifest, every entry checked: a plain name inside the checkpoint (no path, no
    `..`), a byte count and a SHA-256, and a total within `MAX_CHECKPOINT_BYTES`."""
    if len(raw) > MANIFEST_LIMIT:
        raise CheckpointError(f"{where}/{MANIFEST} is {len(raw)} bytes: not a manifest")
    try:
        manifest = json.loads(raw)
        files = manifest["files"]
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
        for name, meta in files.items():
            check_entry(name, meta)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise CheckpointError(
            f"{where}/{MANIFEST} is damaged ({exc}); use an older checkpoint"
        ) from None
    total = sum(meta["bytes"] for meta in files.values())
    if total > MAX_CHECKPOINT_BYTES:
        raise CheckpointError(
            f"{where}/{MANIFEST} lists {total:,} bytes, more than the {MAX_CHECKPOINT_BYTES:,} "
            "a checkpoint may hold; refused without reading it"
        )
    return dict(manifest)


def check_entry(name: object, meta: object) -> None:
    """ValueError unless `name` is a plain file name and `meta` a size and a checksum."""
    if not isinstance(name, str) or not SAFE_NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError(f"entry {name!r} is not a plain file name inside the checkpoint")
    if name == MANIFEST:
        raise ValueError(f"entry {name!r} is reserved")
    if not isinstance(meta, dict):
        raise ValueError(f"entry {name!r} has no size and checksum")
    size, digest = meta.get("bytes"), meta.get("sha256")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"entry {name!r}: bytes must be an integer >= 0")
    if not isinstance(digest, str) or not HEX64.fullmatch(digest):
        raise ValueError(f"entry {name!r}: sha256 must be 64 hex digits")


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
