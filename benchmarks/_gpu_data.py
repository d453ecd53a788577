"""The batches the in-process sections of benchmarks/gpu_check.py train on: windows of real
bars prepared as `foxhunt train --preset tft-225` prepares them (its feature groups), or,
without a bars file, random batches of the preset's shape, said so in ``label``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from foxhunt.batch import TFTBatch
from foxhunt.bench.memory import random_batch
from foxhunt.model.config import DATA_FIELDS, TFTConfig


@dataclass(frozen=True)
class Batches:
    """``config`` completed from the data (input counts), its batches, and where they came
    from in words, for the report."""

    config: TFTConfig
    batches: list[TFTBatch]
    label: str

    def at(self, step: int) -> TFTBatch:
        """The batch of a step: the list cycled (epochs over the same windows)."""
        return self.batches[step % len(self.batches)]


def input_counts(
    num_static: int, cardinalities: Sequence[int] | None, num_past: int, num_future: int
) -> str:
    return (
        f"{num_static} static + {len(cardinalities or ())} categorical, {num_past} past, "
        f"{num_future} future inputs"
    )


def data_label(counts: str, parquet: Path | None) -> str:
    """Where a section's batches came from, in words, with the input counts of its model."""
    if parquet is None:
        return f"synthetic 225-input shape ({counts}), random"
    return f"real windows of {parquet.name}, tft-225 feature set ({counts})"


def _counts(cfg: TFTConfig) -> str:
    return input_counts(cfg.num_static, cfg.static_cardinalities, cfg.num_past, cfg.num_future)


def training_batches(
    cfg: TFTConfig,
    batch_size: int,
    count: int,
    *,
    parquet: Path | None,
    device: torch.device,
) -> Batches:
    """Up to ``count`` batches of ``batch_size`` for the model of ``cfg`` (its lookback and
    horizon): the first training windows of ``parquet`` in order (fewer batches when the file
    holds fewer windows; the caller cycles them), else ``count`` seeded random batches."""
    if parquet is None:
        batches = [random_batch(cfg, batch_size, seed=i, device=device) for i in range(count)]
        return Batches(cfg, batches, data_label(_counts(cfg), None))
    from foxhunt.cli.presets import TFT225_FEATURES
    from foxhunt.data import DataConfig, make_loader, prepare_data
    from foxhunt.jobs.prepare import fit_model_config

    assert cfg.lookback is not None and cfg.horizon is not None, "a preset's windows"
    data = prepare_data(
        DataConfig(
            path=parquet,
            lookback=cfg.lookback,
            horizon=cfg.horizon,
            feature_groups=TFT225_FEATURES,
        )
    )
    unset: dict[str, Any] = dict.fromkeys(DATA_FIELDS)  # the input counts come from the data
    fitted = fit_model_config(replace(cfg, **unset), data)
    loader = make_loader(data.train, batch_size=batch_size, shuffle=False)
    batches = []
    for batch in loader:
        if len(batches) == count:
            break
        if batch.past.shape[0] == batch_size:  # a short last batch would change the shape
            batches.append(batch.to(device))
    if not batches:
        raise ValueError(f"{parquet}: fewer than {batch_size} training windows")
    label = f"{data_label(_counts(fitted), parquet)}, {len(batches)} distinct batches"
    return Batches(fitted, batches, label)
