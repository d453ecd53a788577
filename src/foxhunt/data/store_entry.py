"""What every feature store entry holds beside its inputs, written the same way whether the
inputs were prepared in memory (`feature_store.write_entry`) or a symbol at a time
(`streamed.py`): its [N] vectors, JSON files and the manifest's metadata."""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch

from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.summary import DataSummary
from foxhunt.storage.staged import Staging


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
