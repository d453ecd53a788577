"""What every feature store entry holds beside its inputs, written the same way whether the
inputs were prepared in memory (`feature_store.write_entry`) or a symbol at a time
(`streamed.py`): its [N] vectors, JSON files and the manifest's metadata."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.summary import DataSummary
from foxhunt.data.windows import SPLITS
from foxhunt.errors import DataError
from foxhunt.storage.staged import Staging

#: what every entry of this format holds and `read_entry` reads (the optional [N] vectors
#: aside): a manifest without ranges.npy, checksums redone, trained without the range loss
REQUIRED = (
    "inputs.npy", "times.npy", "symbol_codes.npy", "ranges.npy", "preprocessor.json",
    "summary.json", *(f"anchors-{name}.npy" for name in SPLITS),
)  # fmt: skip


def stored_block(block: np.ndarray, dtype: str) -> np.ndarray:
    """A block of scaled float32 inputs as the store keeps them (`DataConfig.feature_store_
    dtype`): float16 rounds each value once; one beyond float16's range (a scaled input past
    +-65504) is refused rather than stored as an infinity."""
    if dtype == "float32":
        return block
    with np.errstate(over="ignore"):  # an overflow is found below, and named
        out = block.astype(dtype)
    if np.isinf(out).any() and not np.array_equal(np.isinf(out), np.isinf(block)):
        top = float(np.abs(block[np.isfinite(block)]).max())
        raise DataError(
            f"a scaled input reaches {top:.4g}, beyond {dtype}'s range: use "
            "feature_store_dtype float32 (--feature-store-dtype float32)"
        )
    return out


def write_files(
    stage: Staging,
    vectors: dict[str, Any],
    preprocessor: Preprocessor,
    summary: DataSummary,
    material: dict[str, Any],
) -> None:
    """The entry's [N] vectors (None: absent) and its JSON files."""
    for name, values in vectors.items():
        if values is not None:
            stage.save(
                f"{name}.npy", values.numpy() if isinstance(values, torch.Tensor) else values
            )
    stage.json("preprocessor.json", preprocessor.state_dict())
    stage.json("summary.json", summary.to_dict())
    stage.json("key.json", material)


def entry_metadata(
    stage: Staging,
    times: pd.DatetimeIndex,
    symbols: dict[str, list[int]],
    *,
    rows: int,
    width: int,
    pre: Preprocessor,
) -> dict[str, Any]:
    """The manifest's metadata of an entry of `rows` x `width` inputs."""
    return {
        "rows": rows,
        "inputs": width,
        "num_observed": width - len(pre.schema.future_names),
        "lookback": pre.lookback,
        "horizon": pre.horizon,
        "times": {"unit": times.unit, "tz": str(times.tz), "name": times.name},
        "symbols": symbols,
        "bytes": sum(f["bytes"] for f in stage.files.values()),
    }
