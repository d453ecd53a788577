"""Shared by the config dataclasses: reading one back from JSON refuses fields it lacks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from foxhunt.errors import ConfigError


def check_known_fields(cls: Any, data: Mapping[str, Any], what: str) -> None:
    """ConfigError naming every key of `data` that is not a field of dataclass `cls`."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown {what} fields {unknown}; valid: {sorted(known)}")


#: Fields added after runs were first saved, with the value that reproduces how such a run
#: was trained: a config.json or checkpoint without the field reads as this value, never as
#: today's default (a run saved before the fast volatility signal had none).
LEGACY_VALUES: dict[str, dict[str, Any]] = {
    "data": {
        "fast_window": 0,
        "calendar": "none",
        "cross_breaks": False,
        "contract_column": None,  # contract columns were ignored
        "feature_groups": [],  # today's inputs only, as before the feature library (as JSON holds it)
        "base": "realized_vol",  # the rolling base, the only one before DataConfig.base
    },
    "model": {"output": "direct", "learn_spread": False, "vol_signals": 0, "sort_quantiles": False},
    "training": {
        "validate_initial": False,
        "calibrate": False,
        "initial_confidence": 0.0,
        "lr_schedule": "constant",
        "warmup_steps": None,
        "warmup_fraction": 0.05,
        "min_lr": 0.0,
        "threads": 0,  # runs took torch's default count; it never changes a run's results
    },
}


def with_legacy_values(section: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` with every field it lacks from LEGACY_VALUES[section] filled in."""
    return {**LEGACY_VALUES.get(section, {}), **data}
