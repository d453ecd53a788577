"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from foxhunt.errors import FoxhuntError

#: errors that say the folder cannot hold the file (not a full disk: callers handle that)
PLACE_ERRORS = (
    errno.ENOENT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG, errno.ENOTDIR,
)  # fmt: skip


class OutputPathError(FoxhuntError):
    """An output path that cannot be written as a file."""


def fsync_dir(path: Path) -> None:
    """Persist a rename: the directory entry itself must reach the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_replaceable(path: Path) -> None:
    """The rename would replace whatever `path` is: a folder fails late with a temporary
    name in the message, and a device (/dev/full) or FIFO would be silently destroyed."""
    if path.exists() and not path.is_file():
        kind = "a folder" if path.is_dir() else "a device, FIFO or socket"
        raise OutputPathError(f"{path} is {kind}, not a file; give a file path to write")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise OutputPathError(f"{path}: {parent} is a file, not a folder")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary name in the same folder, fsync, then rename over `path`."""
    path = Path(path)
    check_replaceable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # its message would name the temporary file, not the output
        if exc.errno not in PLACE_ERRORS:
            raise
        raise OutputPathError(
            f"{path}: cannot write there ({exc.strerror}); choose another path"
        ) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())
