"""A run config as YAML, field by field: the sections of ``RunConfig.to_dict()``, the type
of each field (a search space's values take it), and a config written as YAML (best.yaml).
``--config FILE.yaml`` is read by the CLI (``cli/resolve.py``), as for ``foxhunt train``."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import fields, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from foxhunt.data import DataConfig
from foxhunt.errors import ConfigError
from foxhunt.model.config import DATA_FIELDS, TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.storage import atomic_write_bytes
from foxhunt.training.config import TrainingConfig

SECTIONS: dict[str, type] = {"data": DataConfig, "model": TFTConfig, "training": TrainingConfig}

#: model fields the job fills from the data (jobs/train.fit_model_config): a YAML file's are
#: set aside, and a search space may not set them (search data.lookback instead)
DATA_DERIVED = DATA_FIELDS


@cache
def field_types(section: str) -> dict[str, Any]:
    """Field name -> its type without ``None`` (``int | None`` -> ``int``)."""
    hints = typing.get_type_hints(SECTIONS[section])
    out = {}
    for f in fields(SECTIONS[section]):
        hint = hints[f.name]
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            hint = args[0] if len(args) == 1 else hint
        out[f.name] = hint
    return out


def coerce(section: str, name: str, value: Any) -> Any:
    """YAML 1.1 reads ``1e-4`` (no dot) as a string: a float field takes it as the number."""
    if field_types(section).get(name) is float and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise ConfigError(f"{section}.{name}: {value!r} is not a number") from None
    return value


def write_config_yaml(path: Path, config: Mapping[str, Any], header: str) -> None:
    """``config`` (``RunConfig.to_dict()``) as YAML under a ``# header`` comment, atomically."""
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    body = yaml.safe_dump(dict(config), sort_keys=False, default_flow_style=False)
    atomic_write_bytes(path, (comment + body).encode())


def with_data(config: RunConfig, **changes: Any) -> RunConfig:
    """``config`` with data fields changed (the model's window, from the data, left unset)."""
    return replace(config, data=replace(config.data, **changes))
