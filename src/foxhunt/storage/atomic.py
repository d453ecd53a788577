"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import errno
import glob
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
#: errors that say the file does not fit (a full disk, a quota, a file-size limit)
FULL_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


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
    atomic_write_files({Path(path): data})


def atomic_write_files(files: dict[Path, bytes]) -> None:
    """Each file written under a temporary name beside it and fsynced, then all renamed in
    order: a full disk or a size limit while writing any of them leaves every old file as
    it was (a planted market's bars were replaced, then its record beside them failed)."""
    paths = [Path(p) for p in files]
    for path in paths:
        check_replaceable(path)
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in zip(paths, files.values(), strict=True):
            staged.append((_write_temporary(path, data), path))
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    for folder in dict.fromkeys(p.parent for p in paths):
        fsync_dir(folder)


def _write_temporary(path: Path, data: bytes) -> str:
    """`data` in a new temporary file beside `path`, fsynced; its name. The name carries the
    writer's pid: one left by a writer killed mid-write (kill -9 leaves no `except`) is
    removed by the next write of `path`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_orphans(path)
        prefix = f".{path.name}.{os.getpid()}-"
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
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
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.errno not in FULL_ERRORS:
            raise
        raise OutputPathError(  # "File too large" named no file
            f"{path}: no room to write it ({exc.strerror}); free space or choose another path"
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _remove_orphans(path: Path) -> None:
    """Remove `.NAME.PID-xxxx.tmp` beside `path` whose writer is gone (this machine's pids:
    a live one, or one not ours to signal, is left alone)."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*-*.tmp"):
        pid = tmp.name[len(path.name) + 2 :].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or no such call here
        return True
    return True


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode())
