"""Say what an input path is when it is not a readable file: "file not found" for a folder,
a FIFO or a symlink loop sends the user looking for the wrong problem (and opening a FIFO
would block forever)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from foxhunt.errors import DataError

DATA_FILE = "data file"


def check_readable_file(path: Path, what: str = DATA_FILE) -> None:
    """DataError naming what `path` is unless it is a readable regular file; `what` names
    the input in the message (the hints about bars are for the data file only)."""
    bars = what == DATA_FILE
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DataError(f"{path}: {what} is a symbolic link loop") from None
        if os.path.islink(path):
            raise DataError(f"{path}: {what} is a dangling symbolic link") from None
        if exc.errno == errno.ENOENT:
            hint = "an existing .parquet or .csv bars file" if bars else f"an existing {what}"
            raise DataError(f"{path}: file not found; pass {hint}") from None
        if exc.errno == errno.ENOTDIR:
            raise DataError(f"{path}: a part of this path is a file, not a folder") from None
        raise DataError(f"{path}: {what} cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        inside = "a .parquet or .csv file" if bars else "a file"
        raise DataError(f"{path}: {what} is a folder; pass {inside} inside it")
    if stat.S_ISFIFO(info.st_mode):
        raise DataError(f"{path}: {what} is a named pipe (FIFO); pass a regular file")
    if not stat.S_ISREG(info.st_mode):
        raise DataError(f"{path}: {what} is a device or socket, not a regular file")
    if not os.access(path, os.R_OK):
        raise DataError(f"{path}: {what} is not readable (permission denied)")
    if info.st_size == 0:
        raise DataError(
            f"{path}: {what} is empty (0 bytes)" + ("; pass OHLCV bars" if bars else "")
        )
