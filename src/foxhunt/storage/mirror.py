"""A store's entries kept behind an fsspec URL (s3://, gs://, memory://...), used through a
local cache folder: training maps an entry's arrays into memory, which needs local files.

An object store has no atomic folder rename, so, as for checkpoints (storage/remote.py), the
manifest is the commit marker: an entry's files are uploaded first and its manifest last,
and an entry without a manifest was never completed. A fetched entry is trusted as a local
one is (storage/staged.py: every file against the manifest's size and SHA-256, the manifest
against its own checksum); a damaged one is uploaded again once rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import fsspec

from foxhunt.storage.staged import MANIFEST, StoreError, staging

log = logging.getLogger("foxhunt.storage")


def is_url(location: str) -> bool:
    return "://" in location


def cache_folder(url: str) -> Path:
    """The local folder caching `url`'s entries: $XDG_CACHE_HOME (else ~/.cache)
    /foxhunt/feature-store/ and a hash of the URL, one folder per store."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    name = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return base / "foxhunt" / "feature-store" / name


class Mirror:
    """The entries of the store at `url`, fetched to and uploaded from `cache`."""

    def __init__(self, url: str, cache: Path, hint: str) -> None:
        try:
            self.fs, root = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError) as exc:  # an unknown scheme, or its package missing
            raise StoreError(
                f"feature store {url}: {exc} (install the fsspec filesystem for that scheme, "
                "e.g. s3fs or gcsfs, or give a local folder)"
            ) from None
        self.url, self.root = url.rstrip("/"), root.rstrip("/")
        self.cache, self.hint = cache, hint

    def _remote(self, key: str, name: str = "") -> str:
        return "/".join(p for p in (self.root, key, name) if p)

    def manifest(self, key: str) -> dict[str, Any] | None:
        """The uploaded entry's manifest; None when it has none (never completed)."""
        try:
            with self.fs.open(self._remote(key, MANIFEST), "rb") as f:
                return dict(json.loads(f.read()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("feature store: %s is unreadable (%s)", self._remote(key, MANIFEST), exc)
            return None

    def fetch(self, key: str, manifest: dict[str, Any]) -> bool:
        """Download the entry into `cache/key`: its files, then its manifest, under a
        staging name renamed into place (the local store's rule: complete or absent). False
        (nothing kept) when a file the manifest lists is missing there."""
        with staging(self.cache, key, hint=self.hint) as stage, stage.errors():
            for name in manifest["files"]:
                try:
                    self.fs.get_file(self._remote(key, str(name)), str(stage.path / str(name)))
                except FileNotFoundError:
                    log.warning("feature store: %s is missing", self._remote(key, str(name)))
                    shutil.rmtree(stage.path, ignore_errors=True)
                    return False
            (stage.path / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
            stage.place()  # not hashed here: the first read checks every file fetched
        return True

    def upload(self, key: str) -> None:
        """Upload `cache/key`: every file its manifest lists, then the manifest."""
        local = self.cache / key
        manifest = json.loads((local / MANIFEST).read_bytes())
        try:
            self.fs.makedirs(self._remote(key), exist_ok=True)
            for name in (*manifest["files"], MANIFEST):  # the manifest last: the commit
                self.fs.put_file(str(local / str(name)), self._remote(key, str(name)))
        except OSError as exc:
            raise StoreError(
                f"{self.url}: cannot upload the feature store entry {key} ({exc}); {self.hint}"
            ) from None
