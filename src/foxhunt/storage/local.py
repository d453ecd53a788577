"""Checkpoints in a local folder: written under a temporary name, fsynced, then renamed."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import uuid
from collections.abc import Mapping
from pathlib import Path

from foxhunt.storage.atomic import fsync_dir
from foxhunt.storage.base import (
    MANIFEST,
    MANIFEST_LIMIT,
    CheckpointError,
    make_manifest,
    parse_manifest,
    verify,
)

TMP_PREFIX = ".tmp-"


def read_plain(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file that is not a symbolic link."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode):
        raise CheckpointError(f"{path} is not a regular file (a link, folder or device)")
    if info.st_size > limit:
        raise CheckpointError(
            f"{path} is {info.st_size:,} bytes, more than its manifest's {limit:,}"
        )
    with open(path, "rb") as f:
        return f.read(limit + 1)


class LocalStorage:
    """`root/<name>/` per checkpoint; a half-written one only ever exists as `root/.tmp-*`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def describe(self, name: str) -> str:
        return str(self.root / name)

    def save(self, name: str, files: Mapping[str, bytes]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f"{TMP_PREFIX}{name}-{uuid.uuid4().hex[:8]}"
        try:
            tmp.mkdir()
            for file, data in {**files, MANIFEST: make_manifest(files)}.items():
                with (tmp / file).open("wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            fsync_dir(tmp)
            final = self.root / name
            if final.exists():  # replacing a checkpoint of the same name: old one out of the way
                shutil.rmtree(final)
            tmp.rename(final)
            fsync_dir(self.root)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            reason = "no space left on device" if exc.errno == errno.ENOSPC else str(exc)
            raise CheckpointError(
                f"could not write checkpoint {self.root / name}: {reason}; earlier checkpoints "
                f"in {self.root} are intact, free space and resume with --resume"
            ) from exc

    def load(self, name: str) -> dict[str, bytes]:
        folder = self.root / name
        manifest_path = folder / MANIFEST
        if folder.is_symlink() or not manifest_path.is_file():
            raise CheckpointError(f"{folder} is not a complete checkpoint (no {MANIFEST})")
        manifest = parse_manifest(read_plain(manifest_path, MANIFEST_LIMIT), str(folder))
        data = {}
        for file, meta in manifest["files"].items():  # names checked: plain, inside `folder`
            path = folder / file
            if not os.path.lexists(path):
                continue  # verify names the missing file
            info = os.lstat(path)  # stat before reading: nothing larger is read
            if not stat.S_ISREG(info.st_mode):
                raise CheckpointError(f"{path} is not a regular file (a link, folder or device)")
            size = info.st_size
            if size != meta["bytes"]:
                raise CheckpointError(
                    f"{path} is truncated or altered ({size:,} of {meta['bytes']:,} bytes); "
                    f"checkpoint {name} refused, resume from an older one (--resume-from STEP)"
                )
            data[file] = read_plain(path, meta["bytes"])
        verify(name, str(folder), manifest, data)
        return data

    def list(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and not p.name.startswith(TMP_PREFIX) and (p / MANIFEST).is_file()
        )

    def delete(self, name: str) -> None:
        shutil.rmtree(self.root / name, ignore_errors=True)

    def clean_partial(self) -> None:
        """Remove leftovers of saves that were killed mid-write."""
        if self.root.is_dir():
            for p in self.root.glob(f"{TMP_PREFIX}*"):
                shutil.rmtree(p, ignore_errors=True)
