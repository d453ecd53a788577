"""The benchmark's model presets (``foxhunt bench-memory --preset``, ``foxhunt train --preset``):
configs only, so that listing them (``--help``) imports no torch."""

from __future__ import annotations

from dataclasses import dataclass

from foxhunt.model.config import TFTConfig

QUANTILES_7 = (0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98)


@dataclass(frozen=True)
class Preset:
    config: TFTConfig
    batch_size: int


def _225_inputs(*, hidden: int, lookback: int, horizon: int) -> TFTConfig:
    """5 static, 220 past and 10 future inputs, 7 quantiles, variable width 16."""
    return TFTConfig(
        num_static=5,
        num_past=220,
        num_future=10,
        hidden_size=hidden,
        variable_hidden_size=16,
        lookback=lookback,
        horizon=horizon,
        quantiles=QUANTILES_7,
    )


PRESETS = {
    # the config users run out of memory with on 4 GB GPUs
    "tft-225": Preset(_225_inputs(hidden=256, lookback=128, horizon=16), batch_size=32),
    # the CPU reference of benchmarks/model_step.py
    "cpu-reference": Preset(_225_inputs(hidden=64, lookback=64, horizon=8), batch_size=32),
}
