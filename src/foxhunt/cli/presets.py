"""Presets: named starting points for `foxhunt train --preset NAME`, as Python functions.

A preset returns config sections ({"model": {...}, "data": {...}, "training": {...}}) applied
over the dataclass defaults and under every --config file and flag. The model presets are
those of the memory benchmark (`foxhunt.bench.presets.PRESETS`), so a run trains the model
the benchmark measures; the input counts come from the run's data, not the preset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foxhunt.errors import UsageError
from foxhunt.model.config import DATA_FIELDS


def bench_preset(name: str) -> dict[str, Any]:
    from dataclasses import asdict

    from foxhunt.bench.presets import PRESETS

    preset = PRESETS[name]
    model = {k: v for k, v in asdict(preset.config).items() if k not in DATA_FIELDS}
    lookback, horizon = preset.config.lookback, preset.config.horizon
    return {
        "data": {"lookback": lookback, "horizon": horizon},
        "model": model,
        "training": {"batch_size": preset.batch_size},
    }


def cpu_reference() -> dict[str, Any]:
    """The CPU reference of the memory benchmarks: 64 wide, lookback 64, horizon 8, seven
    quantiles, batch 32."""
    return bench_preset("cpu-reference")


#: the tft-225 preset's inputs from OHLCV bars alone (docs/data.md): with the base six,
#: 220 observed inputs at the default windows (fewer if one is constant on the training
#: span), 10 known ones on a bars file with an exchange calendar (clock 4, session 3,
#: cycles 3) and 5 static (the symbol and 4 instrument descriptors); "cross" is left out
#: so that it runs on one symbol
TFT225_FEATURES = (
    *("returns", "realized", "ranges", "activity", "location", "trend", "shape"),
    *("cycles", "instrument"),
)


def tft_225() -> dict[str, Any]:
    """The model users ran out of memory with on 4 GB GPUs: 256 wide, lookback 128, horizon
    16, seven quantiles, batch 32; fed the feature library's OHLCV groups."""
    sections = bench_preset("tft-225")
    sections["data"]["feature_groups"] = list(TFT225_FEATURES)
    return sections


PRESETS: dict[str, Callable[[], dict[str, Any]]] = {
    "cpu-reference": cpu_reference,
    "tft-225": tft_225,
}


def preset(name: str) -> dict[str, Any]:
    if name not in PRESETS:
        raise UsageError(f"--preset {name!r}: use one of {sorted(PRESETS)}")
    return PRESETS[name]()
