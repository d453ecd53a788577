"""A folder of files that is complete or absent: written under a staging name, every file's
size and SHA-256 in a manifest written last, then renamed into place (the feature store).

A reader finds `ROOT/KEY` only after the rename, and trusts it only when every file matches
its manifest and the manifest its own checksum (a file unchanged since it was last hashed,
by its size, times and inode, is not hashed again: `storage/checked.py`); a damaged one is
removed (the caller rebuilds it). A killed writer leaves
`ROOT/.staging-KEY-HOST-PID`, which the next writer on that host removes once PID is gone.
One process writes a key at a time (`writer_lock`, an OS lock the OS releases when its holder
dies): others asking for it meanwhile (DDP ranks, a second run) wait, then read it.
Arrays are written as .npy in row blocks (`ArrayWriter`), hashed as they go, so a writer
never holds more than one block beside what it writes from.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from foxhunt.errors import FoxhuntError
from foxhunt.storage import checked
from foxhunt.storage.atomic import FULL_ERRORS, PLACE_ERRORS, fsync_dir

try:
    import fcntl
except ImportError:  # Windows: no lock, concurrent writers each write and the first rename wins
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("foxhunt.storage")

MANIFEST = "manifest.json"
STAGING = ".staging-"
LOCK = ".lock-"
HASH_CHUNK = 1 << 24


class StoreError(FoxhuntError):
    """A store folder cannot be written (unwritable, read-only or full)."""


def store_error(path: Path, exc: OSError, hint: str) -> OSError | StoreError:
    """The one line for an OSError writing under `path`; other errors stay as they are."""
    if exc.errno in FULL_ERRORS:
        return StoreError(f"{path}: no space left writing the store ({exc.strerror}); {hint}")
    if exc.errno in PLACE_ERRORS:
        return StoreError(f"{path}: cannot write the store there ({exc.strerror}); {hint}")
    return exc


class _Hashed:
    """A binary file that hashes and counts what is written to it."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file, self.sha, self.bytes = file, hashlib.sha256(), 0

    def write(self, data: bytes | memoryview) -> int:
        self.sha.update(data)
        self.bytes += len(data)
        return self.file.write(data)


class ArrayWriter:
    """An [N, ...] .npy file written row block by row block (`append`), N given up front."""

    def __init__(self, file: _Hashed, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.file, self.shape, self.dtype, self.rows = file, shape, dtype, 0
        header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False}
        np.lib.format.write_array_header_2_0(file, {**header, "shape": shape})

    def append(self, block: np.ndarray) -> None:
        if block.dtype != self.dtype or block.shape[1:] != self.shape[1:]:
            raise ValueError(f"block {block.dtype}{block.shape} for {self.dtype}{self.shape}")
        if self.rows + len(block) > self.shape[0]:
            raise ValueError(f"{self.rows + len(block)} rows for {self.shape[0]}")
        self.file.write(np.ascontiguousarray(block).data.cast("B"))
        self.rows += len(block)


class Staging:
    """The files of one store entry being written; `finalize` makes it complete."""

    def __init__(self, root: Path, key: str, hint: str) -> None:
        self.root, self.key, self.hint = root, key, hint
        self.path = root / f"{STAGING}{key}-{socket.gethostname()}-{os.getpid()}"
        self.files: dict[str, dict[str, Any]] = {}

    @contextmanager
    def errors(self) -> Iterator[None]:
        """OSErrors of an unwritable or full place as one line naming the store's root."""
        try:
            yield
        except OSError as exc:
            raise store_error(self.root, exc, self.hint) from None

    @contextmanager
    def _open(self, name: str) -> Iterator[_Hashed]:
        if name in self.files or name == MANIFEST or "/" in name:
            raise ValueError(f"{name!r} is written twice or is not a plain name")
        with self.errors(), open(self.path / name, "wb") as raw:
            file = _Hashed(raw)
            yield file
            raw.flush()
            os.fsync(raw.fileno())
        self.files[name] = {"bytes": file.bytes, "sha256": file.sha.hexdigest()}

    @contextmanager
    def array(self, name: str, shape: tuple[int, ...], dtype: Any) -> Iterator[ArrayWriter]:
        """`name` as an .npy of `shape`, filled by `append`; exactly shape[0] rows."""
        with self._open(name) as file:
            writer = ArrayWriter(file, shape, np.dtype(dtype))
            yield writer
            if writer.rows != shape[0]:
                raise ValueError(f"{name}: {writer.rows} rows written of {shape[0]}")

    def save(self, name: str, array: np.ndarray, block_rows: int = 1 << 16) -> None:
        with self.array(name, array.shape, array.dtype) as writer:
            for start in range(0, max(len(array), 1), block_rows):
                writer.append(array[start : start + block_rows])

    def json(self, name: str, obj: Any) -> None:
        with self._open(name) as file:
            file.write((json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())

    def finalize(self, metadata: dict[str, Any]) -> Path:
        """The manifest last, then the rename; another writer's entry already there wins."""
        manifest = {"format": 1, "key": self.key, "files": self.files, "metadata": metadata}
        manifest["sha256"] = digest = _manifest_sha(manifest)
        with self.errors(), open(self.path / MANIFEST, "w") as f:
            f.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        final = self.root / self.key
        if self.place():  # hashed as written: the first reader need not read it all again
            checked.record(final, digest, self.files)
        return final

    def place(self) -> bool:
        """Rename the staged folder, its manifest written, to `ROOT/KEY`; False (the staged
        folder removed) when another writer's entry is there already: it wins."""
        with self.errors():
            fsync_dir(self.path)
            try:
                os.rename(self.path, self.root / self.key)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                shutil.rmtree(self.path, ignore_errors=True)
                placed = False
            else:
                placed = True
            fsync_dir(self.root)
        return placed


@contextmanager
def staging(root: Path, key: str, *, hint: str) -> Iterator[Staging]:
    """A `Staging` under `root`, removed if the block fails; what a killed writer left on
    this host is removed first. An OSError of an unwritable or full place, here or while
    a file of the entry is written, is one line naming `root` (`StoreError`), `hint` saying
    what to do; other errors of the block pass as they are."""
    stage = Staging(root, key, hint)
    with stage.errors():
        root.mkdir(parents=True, exist_ok=True)
        clean_stale(root)
        shutil.rmtree(stage.path, ignore_errors=True)  # a killed writer's whose PID was reused
        stage.path.mkdir()
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage.path, ignore_errors=True)
        raise


@contextmanager
def writer_lock(root: Path, key: str, *, hint: str) -> Iterator[None]:
    """Hold `ROOT/.lock-KEY` (fcntl.flock) while the block runs; log once, then wait, while
    another process holds it. The lock file stays (removing it would race a waiter)."""
    handle = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        handle = open(root / f"{LOCK}{key}", "a")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise store_error(root, exc, hint) from None
    try:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log.info("store: waiting for another process writing %s", root / key)
                fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()  # releases the lock


def clean_stale(root: Path) -> None:
    """Remove staging folders of writers on this host that are no longer running."""
    host = socket.gethostname()
    for entry in root.glob(f"{STAGING}*"):
        owner, _, pid = entry.name.rpartition("-")
        if not owner.endswith(f"-{host}") or not pid.isdigit() or _alive(int(pid)):
            continue
        log.info("store: removing %s, left by a writer that stopped", entry)
        shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def open_complete(root: Path, key: str, required: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """`ROOT/KEY`'s manifest when it lists every `required` file and every file it lists is
    there with its size and SHA-256; None when absent. A damaged entry is removed, with a
    warning naming what is wrong."""
    path = root / key
    if not path.is_dir():
        return None
    problem = _check(path, key, required)
    if problem is None:
        return dict(json.loads((path / MANIFEST).read_bytes()))
    log.warning("store: %s is damaged (%s); preparing it again", path, problem)
    aside = root / f"{STAGING}{key}-damaged-{time.time_ns()}"
    try:
        os.rename(path, aside)
        shutil.rmtree(aside, ignore_errors=True)
    except OSError:
        pass  # another process moved it first, or the place is read-only: the write will say
    return None


def _check(path: Path, key: str, required: tuple[str, ...]) -> str | None:
    """Why `path` is not a complete entry (None: it is)."""
    try:
        manifest = json.loads((path / MANIFEST).read_bytes())
        files = manifest["files"]
        if manifest.get("key") != key or not isinstance(files, dict):
            return f"{MANIFEST} names another key or no files"
        if not isinstance(manifest.get("metadata"), dict):
            return f"{MANIFEST} has no metadata"
        if manifest.get("sha256") != _manifest_sha(manifest):
            return f"{MANIFEST} was edited (or written before it carried its own checksum)"
        missing = [name for name in required if name not in files]
        if missing:  # a forged manifest, or an older writer's: read, it would miss them
            return f"{MANIFEST} lists no {', '.join(missing)}"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{MANIFEST}: {exc}"
    suspect = checked.to_hash(path, manifest["sha256"], files)  # storage/checked.py
    for name, meta in files.items():
        file = path / str(name)
        try:
            if file.stat().st_size != meta["bytes"]:
                return f"{name} is {file.stat().st_size} bytes, the manifest says {meta['bytes']}"
            if name in suspect and file_sha256(file) != meta["sha256"]:
                return f"{name}: checksum mismatch"
        except (OSError, KeyError, TypeError) as exc:
            return f"{name}: {exc}"
    if suspect:
        checked.record(path, manifest["sha256"], files)
    return None


def _manifest_sha(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest less its own checksum: an edited size, file list or metadata
    (`rows`, `lookback`: read as they are, unchecked) makes the entry damaged."""
    body = {k: v for k, v in manifest.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
