"""Who may write a run folder, and how a run replaces another without losing either.

    with RunFolder(Path("runs/a"), mode="replace") as folder:
        train(..., folder.workdir)   # a fresh sibling .a.new-* while runs/a holds a run
        folder.commit()              # old aside, new in place, old removed

One writer per folder: an exclusive `flock` on the sibling `.NAME.lock` (the OS releases it
when its process dies, so a crashed run never leaves a stale lock; a clean exit removes the
file). A run that replaces
another (`--overwrite`) is written beside it and swapped in by two renames once complete: a
failure or a kill before `commit` leaves the old run exactly as it was.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import os
import shutil
import uuid
from pathlib import Path
from types import TracebackType
from typing import Literal

from foxhunt.errors import ConfigError
from foxhunt.runs.files import MARKERS, OWNED_ENTRIES, PROTECTED_ENTRIES, RUN_ENTRIES
from foxhunt.storage.atomic import fsync_dir

Mode = Literal["new", "replace", "resume"]
NAME_MAX = 255  # bytes in one path component (ext4, xfs, btrfs, tmpfs)


def holds_run(folder: Path) -> bool:
    return any(os.path.lexists(folder / name) for name in RUN_ENTRIES)


def enclosing_run(folder: Path) -> Path | None:
    """A run folder above `folder` (config.json beside weights, preprocessor or identity), if
    any: a run written inside another run's folder or its checkpoints/ is refused. Stricter
    than `holds_run`, since a home folder may well hold something called checkpoints."""
    for above in Path(os.path.abspath(folder)).parents:
        if (above / "config.json").is_file() and any(
            (above / name).exists()
            for name in ("model.safetensors", "preprocessor.json", "identity.json")
        ):
            return above
    return None


def foreign_entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in OWNED_ENTRIES)


def check_output_path(folder: Path, flag: str = "--output-dir") -> None:
    """Refuse, before anything is written, an output folder that cannot be one."""
    if folder.is_symlink() and not folder.exists():
        raise ConfigError(f"{flag} {folder} is a dangling symbolic link")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{flag} {folder} is a file, not a folder; choose another path")
    parent = first_existing(folder.parent)
    if not parent.is_dir():
        raise ConfigError(f"{flag} {folder}: {parent} is a file, not a folder")
    target = folder if folder.exists() else parent
    if not os.access(target, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {folder}: {target} is not writable")
    # beside it go .NAME.lock and .NAME.new-xxxxxxxx: too long a name failed naming those
    longest = len(os.fsencode(folder.name)) + len(".new-xxxxxxxx.")
    if longest > NAME_MAX:
        raise ConfigError(
            f"{flag} {folder}: the name is {len(os.fsencode(folder.name))} bytes; at most "
            f"{NAME_MAX - len('.new-xxxxxxxx.')} fit (foxhunt writes .NAME.new-* beside it)"
        )


def check_output_file(path: Path, flag: str) -> None:
    """An output file (predict --output, evaluate --json) never replaces what foxhunt wrote
    in a run, export, backtest or study folder: `evaluate RUN --json RUN/metrics.json` once
    silently swapped the run's test metrics for another file's."""
    path = Path(path)
    try:
        folder = path.parent.resolve()  # the last part stays: a symlink itself is replaced
    except (OSError, RuntimeError):
        return  # a loop: the write itself reports it
    entry = path.name
    for owner in (folder, *folder.parents):
        if entry in PROTECTED_ENTRIES and any(os.path.lexists(owner / m) for m in MARKERS):
            raise ConfigError(
                f"{flag} {path} would replace {entry!r} of the foxhunt folder {owner}; "
                "write the output elsewhere"
            )
        entry = owner.name


def named(folder: Path) -> Path:
    """`folder` with a name: "." or ".." (or "a/..") has none, and its lock and staging
    folder landed inside it ("./..lock", which --overwrite then called a foreign file)."""
    folder = Path(folder)
    return Path(os.path.abspath(folder)) if folder.name in ("", ".", "..") else folder


def first_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


class RunFolder:
    """The lock and the working folder of one run (see the module docstring)."""

    def __init__(self, final: Path, *, mode: Mode) -> None:
        self.final = named(final)
        self.mode = mode
        self.workdir = self.final
        self._folder_lock = FolderLock(self.final)
        self._staging: Path | None = None

    def __enter__(self) -> RunFolder:
        check_output_path(self.final)
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            self._choose_workdir()
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._staging is not None:  # not committed: the old run stays, the new is dropped
            shutil.rmtree(self._staging, ignore_errors=True)
        self._unlock()

    def _lock(self) -> None:
        self._folder_lock.acquire()

    def _unlock(self) -> None:
        self._folder_lock.release()

    def _choose_workdir(self) -> None:
        final = self.final
        outer = enclosing_run(final) if self.mode != "resume" else None
        if outer is not None:
            raise ConfigError(
                f"--output-dir {final} is inside the run folder {outer}; a run is never "
                "written into another run's folder: choose a path outside it"
            )
        self._drop_leftovers()
        if self.mode == "resume":
            if not holds_run(final):
                raise ConfigError(
                    f"--resume {final}: no run there (no config.json, checkpoints/...); "
                    "pass the --output-dir of an earlier run"
                )
            return
        if not final.is_dir() or not holds_run(final):
            return  # nothing to lose: write in place
        if self.mode != "replace":
            raise ConfigError(
                f"{final} already holds a run; pass --resume {final} to continue it, "
                "--overwrite to replace it, or another --output-dir"
            )
        foreign = foreign_entries(final)
        if foreign:
            raise ConfigError(
                f"--overwrite replaces {final} whole, and it also holds {foreign[:5]} that "
                "foxhunt did not write; move them away or choose another --output-dir"
            )
        self._staging = final.parent / f".{final.name}.new-{uuid.uuid4().hex[:8]}"
        self._staging.mkdir()
        self.workdir = self._staging

    def _drop_leftovers(self) -> None:
        """Staging folders of killed runs (we hold the lock: nobody else is writing them)."""
        name = glob.escape(self.final.name)  # a "run[1]" or "a*" must not match others'
        for stale in self.final.parent.glob(f".{name}.new-*"):
            shutil.rmtree(stale, ignore_errors=True)
        for stale in self.final.parent.glob(f".{name}.old-*"):
            if self.final.is_dir():  # the swap finished: the old copy is garbage
                shutil.rmtree(stale, ignore_errors=True)
            else:  # killed between the two renames: the old run is the only one, restore it
                stale.rename(self.final)

    def commit(self) -> Path:
        """Put the completed new run in place of the old one; returns the final folder."""
        if self._staging is None:
            return self.final
        old = self.final.parent / f".{self.final.name}.old-{uuid.uuid4().hex[:8]}"
        fsync_dir(self._staging)
        self.final.rename(old)
        self._staging.rename(self.final)
        self._staging = None
        fsync_dir(self.final.parent)
        shutil.rmtree(old, ignore_errors=True)
        self.workdir = self.final
        return self.final


class FolderLock:
    """The exclusive `flock` on ``PARENT/.NAME.lock`` that makes one process the writer of
    the folder NAME (a run, a backtest); a context manager, or acquire() and release()."""

    def __init__(self, final: Path) -> None:
        self.final = named(final)
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        return self.final.parent / f".{self.final.name}.lock"

    def __enter__(self) -> FolderLock:
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        for _ in range(10):  # another process may unlink the file between our open and flock
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    raise ConfigError(
                        f"{self.final} is being written by another foxhunt process (pid "
                        f"{holder}); wait for it to finish or choose another --output-dir"
                    ) from None
                raise
            if same_file(fd, self.path):  # still the file others will open: ours
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
                self._fd = fd
                return
            os.close(fd)
        raise ConfigError(f"{self.path}: could not take the lock (it keeps changing)")

    def release(self) -> None:
        if self._fd is not None:
            # unlink while holding the lock: a process that opened the old file sees a
            # different inode after its flock and retries (see _lock); no lock file is left
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


def same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False
