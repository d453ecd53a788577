"""`prepare_data`: the prepared windows of a run, from a feature store on disk when
`DataConfig.feature_store` names one (docs/data.md, "Feature store"), else in memory.

A store entry, `STORE/KEY` (`data/store_key.py`: the bars' content, the data settings, the
feature code), holds every array a `WindowDataset` reads, one row per bar (rows sorted by
symbol then time; each symbol's row range is in the manifest), as .npy files:

    inputs.npy        [N, P] float32  scaled inputs, written per symbol in row blocks
    targets.npy, symbol_codes.npy, times.npy, volatility.npy, profile.npy, signal.npy [N]
    returns.npy, series_codes.npy [N]  what a base other than the rolling one reads
    anchors-{train,validation,test}.npy   each split's windows
    preprocessor.json, summary.json, key.json

written under a staging name with a checksummed manifest and renamed when complete
(`storage/staged.py`). The first run prepares in memory, writes the entry, frees its matrix
and reads the entry back like every later run: training gathers each batch's rows from the
memory-mapped inputs, bit for bit the values the in-memory path holds.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from foxhunt.data.config import DataConfig
from foxhunt.data.dataset import WindowDataset
from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.features import Features
from foxhunt.data.mapped import mapped_times, mapped_vector
from foxhunt.data.mirrored_store import mirrored
from foxhunt.data.pipeline import PreparedData, prepare_in_memory
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.shared_store import MainShare, Ranks, ShareError, follow
from foxhunt.data.store_entry import REQUIRED, entry_metadata, stored_block, write_files
from foxhunt.data.store_key import key_material, store_key
from foxhunt.data.streamed import why_not_streamed, write_streamed
from foxhunt.data.summary import DataSummary
from foxhunt.data.symbol_inputs import symbol_inputs
from foxhunt.data.windows import SPLITS
from foxhunt.errors import FoxhuntError
from foxhunt.storage.mirror import is_url
from foxhunt.storage.staged import Staging, StoreError, open_complete, staging, writer_lock

log = logging.getLogger("foxhunt.data")

HINT = "choose another folder with --feature-store, or free space there"
BLOCK_ROWS = 1 << 16  # rows of the input matrix written at a time


def prepare_data(
    config: DataConfig, *, preprocessor: Preprocessor | None = None, ranks: Ranks | None = None
) -> PreparedData:
    """Bars in; train/validation/test windows, schema and fitted preprocessing out (see
    `prepare_in_memory`), through the feature store when the config names one. With
    `preprocessor` (a resumed run) its fitted state scales the inputs, as in memory. With
    `ranks` (every rank of a DDP job calls this), the ranks compute a new streamed entry's
    symbols together (data/shared_store.py)."""
    if config.feature_store is None:
        return prepare_in_memory(config, preprocessor=preprocessor)
    if is_url(config.feature_store):
        return mirrored(config, preprocessor, ranks, prepare_at=_prepare_at)
    return _prepare_at(Path(config.feature_store).expanduser(), config, preprocessor, ranks)


def _prepare_at(
    root: Path,
    config: DataConfig,
    preprocessor: Preprocessor | None,
    ranks: Ranks | None,
    material: dict[str, Any] | None = None,
) -> PreparedData:
    """`prepare_data` through the store folder `root` (`material`: the key's, if known)."""
    start = time.perf_counter()
    share = None
    if ranks is not None and ranks.enabled:
        if ranks.rank:
            follow(ranks, config.prepare_workers, HINT)
        else:
            share = MainShare(ranks, HINT)
    try:
        if root.exists() and not root.is_dir():
            raise StoreError(f"{root}: the feature store is a file, not a folder; {HINT}")
        material = material or key_material(config, preprocessor)
        key = store_key(material)
        manifest = open_complete(root, key, REQUIRED)
        if manifest is None:  # another process may be writing it: wait for it, then look again
            with writer_lock(root, key, hint=HINT):
                manifest = open_complete(root, key, REQUIRED)
                if manifest is None and (ranks is None or not ranks.rank):
                    return _write(root, key, config, preprocessor, material, share)
                if manifest is None:  # rank 0 stopped after the symbols: its log says why
                    raise ShareError(f"rank 0 did not finish the feature store entry {root / key}")
    except FoxhuntError as exc:
        if share is not None:
            share.fail(exc)
        raise
    finally:
        if share is not None:
            share.finish()
    meta = manifest["metadata"]
    data = read_entry(root / key, meta)
    took, prepared = time.perf_counter() - start, meta.get("prepare_s")  # absent: older entry
    saved = "" if prepared is None else f"; preparing it took {prepared:.1f} s"
    log.info(
        "feature store: reusing %s (%d rows, %.0f MB) in %.1f s%s",
        root / key,
        meta["rows"],
        meta["bytes"] / 1e6,
        took,
        saved,
    )
    return data


def _write(
    root: Path,
    key: str,
    config: DataConfig,
    preprocessor: Preprocessor | None,
    material: dict[str, Any],
    share: MainShare | None = None,
) -> PreparedData:
    """Prepare in memory, write `ROOT/KEY`, free the matrix and read the entry back; `share`:
    the DDP ranks compute a streamed entry's symbols."""
    start = time.perf_counter()
    log.info("feature store: writing %s", root / key)
    with staging(root, key, hint=HINT) as stage:  # unwritable: one line, before preparing
        why = why_not_streamed(config, preprocessor)
        if why is None:  # a symbol at a time (streamed.py): the matrix is never held whole
            compute = symbol_inputs if share is None else share.compute
            meta = write_streamed(stage, config, material, compute)
        else:
            log.info("feature store: %s", why)
            if share is not None:
                share.finish()  # nothing to share: the other ranks wait for the entry
            data = prepare_in_memory(config, preprocessor=preprocessor)
            meta = write_entry(stage, data, material, config.feature_store_dtype)
            del data  # the matrix is freed: training reads the entry as a later run does
        meta |= {"streamed": why is None, "prepare_s": round(time.perf_counter() - start, 3)}
        stage.finalize(meta)
    log.info(
        "feature store: wrote %s (%d rows, %.0f MB) in %.1f s",
        root / key,
        meta["rows"],
        meta["bytes"] / 1e6,
        meta["prepare_s"],
    )
    return read_entry(root / key, meta)


def _symbol_ranges(codes: np.ndarray, symbols: tuple[str, ...]) -> dict[str, list[int]]:
    """Each symbol's [first, stop) rows (codes are non-decreasing)."""
    edges = np.searchsorted(codes, np.arange(len(symbols) + 1))
    return {name: [int(edges[i]), int(edges[i + 1])] for i, name in enumerate(symbols)}


def write_entry(
    stage: Staging, data: PreparedData, material: dict[str, Any], dtype: str = "float32"
) -> dict[str, Any]:
    """Every array of `data` into `stage`, the inputs as `dtype`; the manifest's metadata."""
    train, encoded = data.train, data.encoded
    if (
        encoded is None
        or train.target_values is None
        or not isinstance(train.past_values, torch.Tensor)
    ):
        raise ValueError("the feature store writes freshly prepared data with its targets")
    inputs = train.past_values.numpy()
    symbols = data.preprocessor.symbols.categories
    ranges = _symbol_ranges(encoded.symbol_codes, symbols)
    with stage.array("inputs.npy", inputs.shape, np.dtype(dtype)) as writer:
        for first, stop in ranges.values():  # per symbol, in row blocks
            for start in range(first, stop, BLOCK_ROWS):
                block = inputs[start : min(start + BLOCK_ROWS, stop)]
                writer.append(stored_block(block, dtype))
    vectors: dict[str, torch.Tensor | np.ndarray | None] = {
        "targets": train.target_values,
        "symbol_codes": train.symbol_codes,
        "times": encoded.times.asi8,
        "volatility": train.base_volatility,
        "profile": train.profile,
        "signal": train.vol_signal,
        "ranges": train.range_values,
        "returns": encoded.features.returns,
        "series_codes": encoded.series_codes,
    }
    vectors |= {f"anchors-{name}": getattr(data, name).anchors for name in SPLITS}
    write_files(stage, vectors, data.preprocessor, data.summary, material)
    return entry_metadata(
        stage, encoded.times, ranges, rows=len(inputs), width=inputs.shape[1], pre=data.preprocessor
    )


def _vector(path: Path, name: str) -> torch.Tensor | None:
    """[N] `name` memory-mapped copy-on-write (writable for torch; the file never changes),
    pickled as its file (data/mapped.py)."""
    file = path / f"{name}.npy"
    return mapped_vector(file) if file.exists() else None


def _needed(vector: torch.Tensor | None) -> torch.Tensor:
    assert vector is not None, "a complete entry holds its codes and anchors"
    return vector


def _times(path: Path, clock: dict[str, Any]) -> pd.DatetimeIndex:
    """The bars' times, tz-aware, over the mapped file itself: integers are read as UTC
    epochs of the dtype's unit, so nothing is copied (issue 41's flat training peak)."""
    dtype = pd.DatetimeTZDtype(clock["unit"], clock["tz"])
    return mapped_times(path / "times.npy", dtype, clock["name"])


def read_entry(path: Path, meta: dict[str, Any]) -> PreparedData:
    """The prepared data of a complete entry: its inputs memory-mapped read-only."""
    pre = Preprocessor.from_state_dict(json.loads((path / "preprocessor.json").read_text()))
    summary = DataSummary.from_dict(json.loads((path / "summary.json").read_text()))
    times = _times(path, meta["times"])
    inputs = np.load(path / "inputs.npy", mmap_mode="r")
    names = ("targets", "volatility", "profile", "signal", "ranges")
    vectors = {n: _vector(path, n) for n in names}
    codes = _needed(_vector(path, "symbol_codes"))
    static = pre.static_values()
    sets = {  # one set of storage shared by the splits, as in memory
        name: WindowDataset(
            past_values=inputs,
            num_observed=meta["num_observed"],
            target_values=vectors["targets"],
            symbol_codes=codes,
            anchors=_needed(_vector(path, f"anchors-{name}")),
            lookback=meta["lookback"],
            horizon=meta["horizon"],
            timestamps=times,
            symbols=pre.symbols.categories,
            base_volatility=vectors["volatility"],
            profile=vectors["profile"],
            vol_signal=vectors["signal"],
            static_values=static,
            range_values=vectors["ranges"],
        )
        for name in SPLITS
    }
    return PreparedData(
        **sets,
        schema=pre.schema,
        preprocessor=pre,
        summary=summary,
        encoded=_stored_bars(path, times, codes.numpy(), meta["num_observed"]),
    )


def _stored_bars(
    path: Path, times: pd.DatetimeIndex, codes: np.ndarray, num_observed: int
) -> EncodedFrame:
    """What `Preprocessor.baseline` reads of the bars (another base rescales the windows,
    data/rebase.py): returns, times and codes; the frame and inputs are not kept."""
    returns = np.load(path / "returns.npy", mmap_mode="r")
    features = Features(
        inputs=np.empty((len(returns), 0), np.float32), num_observed=num_observed, returns=returns
    )
    return EncodedFrame(
        frame=pd.DataFrame(),
        times=times,
        symbol_codes=codes,
        features=features,
        finite=np.isfinite(returns),
        series_codes=np.load(path / "series_codes.npy", mmap_mode="r"),
    )
