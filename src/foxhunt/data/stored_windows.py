"""A run's bars read from its feature store entry (issue 41): `foxhunt evaluate` and
`foxhunt predict` on the bars a run was trained from read every window, or each symbol's
latest one, from the memory-mapped entry instead of encoding the file in memory, so bars too
large for memory are scored and forecast too.

The entry is the one training used or would use (`store_key.key_material` of the run's data
settings with the file and filters given), complete and prepared with the run's own
preprocessing (its state equal but for the base volatility, which is computed here with the
run's preprocessor as `Preprocessor.dataset` does). The windows are `Preprocessor.dataset`'s:
every window of the bars, whatever its split, over the entry's scaled inputs, targets and
ranges (float16 entries: the rounded inputs the run trained on); the latest windows are
`latest_windows`' (not when the known inputs read each bar's contract, which the entry does
not keep). A URL store is read from this machine's cache of it only. Anything else (no entry, another code version, another
preprocessor: a resumed run's) gives None, and the caller encodes the file in memory.
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from foxhunt.data.config import DataConfig
from foxhunt.data.dataset import WindowDataset
from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.feature_store import read_entry
from foxhunt.data.features.matrix import finite_rows
from foxhunt.data.latest import LatestWindows, latest_of, latest_rows
from foxhunt.data.pipeline import PreparedData
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.store_entry import REQUIRED
from foxhunt.data.store_key import key_material, store_key
from foxhunt.storage.mirror import cache_folder, is_url
from foxhunt.storage.staged import open_complete

log = logging.getLogger("foxhunt.data")


def stored_windows(config: DataConfig, preprocessor: Preprocessor) -> WindowDataset | None:
    """Every window of `config`'s bars from a complete entry of `config.feature_store` made
    with `preprocessor`'s preprocessing; None when there is no such entry."""
    found = _entry(config, preprocessor)
    if found is None:
        return None
    entry, meta = found
    dataset = _every_window(entry, meta, preprocessor, str(config.path))
    log.info("feature store: every window read from %s (%d windows)", entry, len(dataset))
    return dataset


def stored_latest(
    config: DataConfig, preprocessor: Preprocessor, future: pd.DataFrame | None
) -> LatestWindows | None:
    """`latest_windows` of `config`'s bars with their inputs read from the run's entry (as
    `stored_windows`); None without one, or when the known inputs read each bar's contract,
    which the entry does not keep (group `expiry`)."""
    if preprocessor.spec.reads_contracts:
        return None
    found = _entry(config, preprocessor)
    if found is None:
        return None
    entry, meta = found
    data = read_entry(entry, meta)
    encoded, inputs = _stored_bars(data, str(config.path)), data.train.past_values
    rows = latest_rows(encoded, preprocessor.lookback)
    finite = np.isfinite(np.asarray(encoded.features.returns))
    finite[rows] &= np.isfinite(_rows(inputs, rows)).all(axis=-1)  # only the rows read
    latest = latest_of(
        preprocessor, replace(encoded, finite=finite), future, partial(_rows, inputs)
    )
    log.info("feature store: the latest windows read from %s", entry)
    return latest


def _rows(inputs: np.ndarray | torch.Tensor, rows: np.ndarray) -> np.ndarray:
    """inputs[rows] as float32 [*rows.shape, P] (a float16 entry's values widened)."""
    flat = np.asarray(inputs[rows.ravel()], dtype=np.float32)
    return flat.reshape(*rows.shape, -1)


def _entry(config: DataConfig, preprocessor: Preprocessor) -> tuple[Path, dict[str, Any]] | None:
    """The complete entry of `config`'s bars made with `preprocessor`'s preprocessing (but
    for its base) and its manifest's metadata; None when there is none."""
    if config.feature_store is None or config.path is None:
        return None
    store = config.feature_store
    root = cache_folder(store) if is_url(store) else Path(store).expanduser()
    if not root.is_dir():
        return None
    key = store_key(key_material(config, None))
    manifest = open_complete(root, key, REQUIRED)
    if manifest is None:
        return None
    entry = root / key
    saved = json.loads((entry / "preprocessor.json").read_text())
    if _without_base(saved) != _without_base(_as_json(preprocessor.state_dict())):
        log.info("feature store: %s was prepared with other preprocessing; not read", entry)
        return None
    return entry, manifest["metadata"]


def _as_json(state: dict[str, object]) -> dict[str, object]:
    return json.loads(json.dumps(state, default=str))  # tuples as lists, as saved


def _without_base(state: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in state.items() if k != "base"}


def _every_window(
    entry: Path, meta: dict[str, Any], pre: Preprocessor, source: str
) -> WindowDataset:
    """`Preprocessor.dataset`'s windows over the entry's arrays."""
    data = read_entry(entry, meta)
    encoded, inputs = _stored_bars(data, source), data.train.past_values
    finite = finite_rows(np.asarray(inputs)) & np.isfinite(encoded.features.returns)
    encoded = replace(encoded, finite=finite)
    baseline = pre.baseline(encoded)
    anchors = pre.every_anchor(encoded, baseline)
    # the train windows' storage, with the run's base behind the scale and every anchor
    dataset = copy.copy(data.train) if baseline is None else data.train.with_baseline(baseline)
    dataset.anchors = torch.from_numpy(anchors.astype(np.int64))
    return dataset


def _stored_bars(data: PreparedData, source: str) -> EncodedFrame:
    """The entry's returns, times and codes, named as the bars file for error messages."""
    assert data.encoded is not None, "read_entry keeps the bars' returns, times and codes"
    data.encoded.frame.attrs["source"] = source
    return data.encoded
