"""Checkpoints behind an fsspec URL (s3://, gs://, memory://, file://...).

Object stores have no atomic folder rename, so the manifest is the commit marker: files go
first, the manifest last; a checkpoint whose manifest is absent was never completed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import fsspec

from foxhunt.storage.base import (
    MANIFEST,
    MANIFEST_LIMIT,
    CheckpointError,
    make_manifest,
    parse_manifest,
    verify,
)


class FsspecStorage:
    def __init__(self, url: str, **storage_options: Any) -> None:
        try:
            self.fs, self.root = fsspec.core.url_to_fs(url, **storage_options)
        except (ImportError, ValueError) as exc:
            raise CheckpointError(
                f"cannot open checkpoint storage {url!r}: {exc} (install the fsspec "
                "filesystem for that scheme, e.g. s3fs or gcsfs)"
            ) from exc
        self.url = url.rstrip("/")
        self.root = self.root.rstrip("/")

    def describe(self, name: str) -> str:
        return f"{self.url}/{name}"

    def _path(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    def save(self, name: str, files: Mapping[str, bytes]) -> None:
        try:
            if self.fs.exists(self._path(name, MANIFEST)):
                self.fs.rm(self._path(name, MANIFEST))  # uncommit before overwriting
            self.fs.makedirs(self._path(name), exist_ok=True)
            for file, data in files.items():
                self.fs.pipe_file(self._path(name, file), data)
            self.fs.pipe_file(self._path(name, MANIFEST), make_manifest(files))
        except OSError as exc:
            raise CheckpointError(
                f"could not write checkpoint {self.describe(name)}: {exc}; earlier checkpoints "
                "are intact"
            ) from exc

    def load(self, name: str) -> dict[str, bytes]:
        where = self.describe(name)
        if not self.fs.exists(self._path(name, MANIFEST)):
            raise CheckpointError(f"{where} is not a complete checkpoint (no {MANIFEST})")
        if self.fs.size(self._path(name, MANIFEST)) > MANIFEST_LIMIT:
            raise CheckpointError(f"{where}/{MANIFEST} is too large to be a manifest")
        manifest = parse_manifest(self.fs.cat_file(self._path(name, MANIFEST)), where)
        data = {}
        for f, meta in manifest["files"].items():  # plain names (parse_manifest checked them)
            path = self._path(name, f)
            if not self.fs.exists(path):
                continue
            if self.fs.size(path) != meta["bytes"]:  # sized before it is read
                raise CheckpointError(f"{where}/{f} does not have its manifest's size; refused")
            data[f] = self.fs.cat_file(path)
        verify(name, where, manifest, data)
        return data

    def list(self) -> list[str]:
        if not self.fs.exists(self.root):
            return []
        names = []
        for entry in self.fs.ls(self.root, detail=False):
            name = str(entry).rstrip("/").rsplit("/", 1)[-1]
            if self.fs.exists(self._path(name, MANIFEST)):
                names.append(name)
        return sorted(names)

    def delete(self, name: str) -> None:
        if self.fs.exists(self._path(name)):
            self.fs.rm(self._path(name, MANIFEST))  # uncommit first: never half-deleted-but-listed
            self.fs.rm(self._path(name), recursive=True)

    def clean_partial(self) -> None:
        # a save writes its manifest last: a folder without one is a killed save's
        if not self.fs.exists(self.root):
            return
        for entry in self.fs.ls(self.root, detail=False):
            name = str(entry).rstrip("/").rsplit("/", 1)[-1]
            if self.fs.isdir(self._path(name)) and not self.fs.exists(self._path(name, MANIFEST)):
                self.fs.rm(self._path(name), recursive=True)


def open_storage(location: str) -> Any:
    """A local folder or an fsspec URL."""
    from pathlib import Path

    from foxhunt.storage.local import LocalStorage

    if "://" in location and not location.startswith("file://"):
        return FsspecStorage(location)
    return LocalStorage(Path(location.removeprefix("file://")))
