"""A run config as YAML, field by field: the sections of ``RunConfig.to_dict()``, the type
of each field, and a YAML file read back as a ``RunConfig`` (``--config FILE.yaml``)."""

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
from foxhunt.storage.bounded_yaml import load_yaml, read_yaml_text
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


def config_from_mapping(raw: Any, where: str) -> RunConfig:
    """``RunConfig.to_dict()``'s format; a field left out has today's default (never the
    value-then of ``config_fields.LEGACY_VALUES``, which is for saved runs)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected sections data, model, training; got {raw!r:.60}")
    unknown = sorted(set(raw) - {*SECTIONS, "model_class", "versions"})  # config.json's too
    if unknown:
        raise ConfigError(f"{where}: unknown sections {unknown}; valid: data, model, training")
    given: dict[str, dict[str, Any]] = {}
    for section in SECTIONS:
        part = raw.get(section) or {}
        if not isinstance(part, Mapping):
            raise ConfigError(f"{where}: section {section} must be a mapping of fields")
        given[section] = {k: coerce(section, str(k), v) for k, v in part.items()}
    for name in DATA_DERIVED:  # a run's config.json has them: the job takes them from the data
        given["model"].pop(name, None)
    try:
        data = DataConfig.from_dict({**DataConfig().to_dict(), **given["data"]})
        model = TFTConfig.from_dict({**TFTConfig().to_dict(), **given["model"]})
        training = TrainingConfig.from_dict({**TrainingConfig().to_dict(), **given["training"]})
        extra = {"model_class": raw["model_class"]} if "model_class" in raw else {}
        return RunConfig(data=data, model=model, training=training, **extra)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except (TypeError, ValueError) as exc:  # a list where a number belongs, and the like
        raise ConfigError(f"{where}: a field has the wrong type ({exc})") from None


def read_config_yaml(path: Path) -> RunConfig:
    """A run config from ``path`` (``foxhunt tune --config``; a run's config.json too)."""
    where = f"--config {path}"
    return config_from_mapping(load_yaml(read_yaml_text(path, where), where), where)


def write_config_yaml(path: Path, config: Mapping[str, Any], header: str) -> None:
    """``config`` (``RunConfig.to_dict()``) as YAML under a ``# header`` comment, atomically."""
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    body = yaml.safe_dump(dict(config), sort_keys=False, default_flow_style=False)
    atomic_write_bytes(path, (comment + body).encode())


def with_data(config: RunConfig, **changes: Any) -> RunConfig:
    """``config`` with data fields changed (the model's window, from the data, left unset)."""
    return replace(config, data=replace(config.data, **changes))
