"""Reads that check what they are about to read: size first, then content.

A run folder or a checkpoint may come from anywhere: a JSON file is never parsed past
`JSON_LIMIT` bytes, and nothing is read from a path that is not a plain file.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from foxhunt.errors import FoxhuntError

JSON_LIMIT = 16 << 20  # config, manifest, preprocessor: a few KiB in practice


class UnsafeFileError(FoxhuntError):
    """A file of a run folder or checkpoint that is not what it claims to be."""


def regular_size(path: Path) -> int:
    """Size of `path` if it is a regular file (not a folder, FIFO or device)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UnsafeFileError(f"{path} not found") from None
    except OSError as exc:
        raise UnsafeFileError(f"{path} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFileError(f"{path} is not a regular file")
    return info.st_size


def read_bytes_bounded(path: Path, limit: int) -> bytes:
    size = regular_size(path)
    if size > limit:
        raise UnsafeFileError(f"{path} is {size} bytes, more than the {limit} allowed")
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while we read it
        raise UnsafeFileError(f"{path} is more than the {limit} bytes allowed")
    return data


def read_json_bounded(path: Path, limit: int = JSON_LIMIT) -> Any:
    raw = read_bytes_bounded(path, limit)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise UnsafeFileError(f"{path} is not valid JSON ({exc}); the file is damaged") from None
