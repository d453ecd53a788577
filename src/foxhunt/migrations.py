"""Saved configs of earlier formats brought to today's: one migration per format version.

A run folder's config.json (and a checkpoint's copy of it) records the ``format`` it was
written in; a file without one is format 0, written before formats were numbered. Loading
runs every migration from the file's format on, in order (``migrated``), so the config
dataclasses see only today's fields and carry only today's defaults: a field added to a
saved config is a new format whose migration gives older files the value they were made
with (never today's default, which may differ), and a field renamed or re-valued is one
too. ``tests/test_migrations.py`` loads saved runs of every format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from foxhunt.errors import ConfigError

#: the key of config.json (and of a checkpoint's config) that records its format
FORMAT_KEY = "format"


@dataclass(frozen=True)
class Migration:
    """A saved config of format ``to - 1`` -> one of format ``to``: ``why`` says what changed."""

    to: int
    why: str
    apply: Callable[[dict[str, Any]], dict[str, Any]]


def filled(
    values_then: Mapping[str, Mapping[str, Any]],
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A migration that gives each section the fields it lacks, as the value runs had before
    the field existed (as JSON holds it). A section the file lacks stays absent."""

    def apply(saved: dict[str, Any]) -> dict[str, Any]:
        out = dict(saved)
        for section, values in values_then.items():
            if isinstance(out.get(section), Mapping):
                out[section] = {**values, **out[section]}
        return out

    return apply


#: every field added to config.json before formats were numbered, with the value the runs
#: saved without it were made with (a file of format 0 may have been written after some of
#: them existed: a field it has keeps its value)
BEFORE_FORMATS: dict[str, dict[str, Any]] = {
    "data": {
        "contract_column": None,  # contract columns were ignored
        "calendar": "none",
        "cross_breaks": False,
        "feature_groups": [],
        "fast_window": 0,
        "base": "realized_vol",
        "feature_store": None,
        "feature_store_dtype": "float32",
        "synthetic_market": "garch",
    },
    "model": {
        "output": "direct",
        "learn_spread": False,
        "vol_signals": 0,
        "log_scale": False,
        "sort_quantiles": False,
    },
    "training": {
        "validate_initial": False,
        "calibrate": False,
        "initial_confidence": 0.0,
        "lr_schedule": "constant",
        "warmup_steps": None,
        "warmup_fraction": 0.05,
        "min_lr": 0.0,
        "threads": 0,  # 0: auto, what runs saved before the default was load-free
        "range_weight": 0.0,  # the pinball loss alone
    },
}

#: in order: ``MIGRATIONS[n]`` takes format n to n + 1
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "fields added before formats were numbered read as their value then",
              filled(BEFORE_FORMATS)),
    Migration(2, "data.prepare_workers: feature stores were prepared in one process",
              filled({"data": {"prepare_workers": 1}})),
    Migration(3, "training.head_fallback: the kept model was served, whatever the other bases",
              filled({"training": {"head_fallback": False}})),
)  # fmt: skip

#: the format config.json is written in today
FORMAT = len(MIGRATIONS)


def saved_format(saved: Mapping[str, Any]) -> int:
    """The format a saved config records (0 without one); ConfigError for one that no
    foxhunt wrote or a newer one wrote."""
    found = saved.get(FORMAT_KEY, 0)
    if isinstance(found, bool) or not isinstance(found, int) or found < 0:
        raise ConfigError(f"{FORMAT_KEY} must be a format number (0 to {FORMAT}), got {found!r}")
    if found > FORMAT:
        raise ConfigError(
            f"{FORMAT_KEY} {found} is newer than this foxhunt reads ({FORMAT}); upgrade foxhunt"
        )
    return found


def migrated(saved: Mapping[str, Any]) -> dict[str, Any]:
    """``saved`` (config.json's object, or its sections) in today's format: each migration
    from its format on, in order, and ``format`` set to today's."""
    out = dict(saved)
    for migration in MIGRATIONS[saved_format(saved) :]:
        out = migration.apply(out)
    out[FORMAT_KEY] = FORMAT
    return out


def sections_of(saved: Mapping[str, Any]) -> dict[str, Any]:
    """``saved`` migrated, without the format it records: the config's sections as today's
    dataclasses read them."""
    out = migrated(saved)
    del out[FORMAT_KEY]
    return out
