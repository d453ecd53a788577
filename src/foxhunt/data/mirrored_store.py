"""A feature store behind an fsspec URL: `prepare_data` through a local cache folder of its
entries (storage/mirror.py), fetched from and uploaded to the URL."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foxhunt.data.config import DataConfig
from foxhunt.data.pipeline import PreparedData
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.shared_store import Ranks
from foxhunt.data.store_entry import REQUIRED
from foxhunt.data.store_key import key_material, store_key
from foxhunt.errors import ConfigError
from foxhunt.storage.mirror import Mirror, cache_folder
from foxhunt.storage.staged import open_complete, writer_lock

log = logging.getLogger("foxhunt.data")

HINT = "choose another place with --feature-store, or free space there"
#: feature_store._prepare_at(root, config, preprocessor, ranks, material), passed in: the
#: imports point one way
PrepareAt = Callable[
    [Path, DataConfig, Preprocessor | None, Ranks | None, dict[str, Any] | None], PreparedData
]


def mirrored(
    config: DataConfig,
    preprocessor: Preprocessor | None,
    ranks: Ranks | None,
    *,
    prepare_at: PrepareAt,
) -> PreparedData:
    """A store behind an fsspec URL (storage/mirror.py): the entry fetched into the local
    cache when the cache lacks it, prepared there when the URL lacks it too, and uploaded
    once complete. Rank 0 alone fetches and uploads; the ranks share the cache folder, so a
    DDP job must run on one machine."""
    url = str(config.feature_store)
    mirror = Mirror(url, cache_folder(url), HINT)
    if ranks is not None and ranks.enabled:
        local = int(os.environ.get("LOCAL_WORLD_SIZE", ranks.world_size))
        if local < ranks.world_size:
            raise ConfigError(
                f"feature_store {url}: a DDP job over several machines cannot share a URL's "
                "local cache; give a folder every machine mounts"
            )
    material = key_material(config, preprocessor)
    key = store_key(material)
    upload = False
    if ranks is None or ranks.rank == 0:
        with writer_lock(mirror.cache, key, hint=HINT):
            if open_complete(mirror.cache, key, REQUIRED) is None:
                manifest = mirror.manifest(key)
                start = time.perf_counter()
                upload = manifest is None or not mirror.fetch(key, manifest)
                if not upload:
                    took = time.perf_counter() - start
                    log.info("feature store: fetched %s/%s in %.1f s", url, key, took)
                    # damaged there: prepared again here, then uploaded over it
                    upload = open_complete(mirror.cache, key, REQUIRED) is None
            else:  # an earlier upload may have stopped before the manifest
                upload = mirror.manifest(key) is None
    data = prepare_at(mirror.cache, config, preprocessor, ranks, material)
    if upload:
        start = time.perf_counter()
        mirror.upload(key)
        took = time.perf_counter() - start
        log.info(
            "feature store: uploaded %s to %s/%s in %.1f s", mirror.cache / key, url, key, took
        )
    return data
