"""The search space: YAML of dotted config fields, each a range or a list of choices.

    training.lr: {low: 1e-4, high: 1e-2, log: true}
    model.hidden_size: {choices: [16, 32]}
    model.dropout: {low: 0.0, high: 0.3}
    data.lookback: {low: 32, high: 128, step: 32}

An int field gets integers, a float field floats; other fields (bool, text) take choices.
Every bound and choice is checked on the base config by the config dataclasses themselves
before the first trial, so a bad range fails at once, naming its key.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import optuna

from foxhunt.errors import ConfigError
from foxhunt.runs import RunConfig
from foxhunt.storage.bounded_yaml import load_yaml, read_yaml_text
from foxhunt.tune.sections import DATA_DERIVED, SECTIONS, coerce, field_types, with_data

RANGE_KEYS = {"low", "high", "log", "step"}
SCALARS = (bool, int, float, str, type(None))


@dataclass(frozen=True, kw_only=True)
class Param:
    """One searched field: ``choices``, or an int/float range [low, high].

    Attributes:
        name: the dotted path, ``section.field``; also the Optuna parameter's name.
        kind: "int", "float" or "choices".
        low: the range's lower end (int and float).
        high: the range's upper end, included.
        log: sample on a log scale (low > 0).
        step: the grid of the range (None = continuous floats, every int).
        choices: the values of a "choices" parameter (scalars).
    """

    name: str
    kind: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    def suggest(self, trial: optuna.Trial) -> Any:
        if self.kind == "choices":
            return trial.suggest_categorical(self.name, list(self.choices))
        if self.kind == "int":
            step = int(self.step or 1)
            return trial.suggest_int(
                self.name, int(self.low), int(self.high), step=step, log=self.log
            )
        return trial.suggest_float(self.name, self.low, self.high, step=self.step, log=self.log)

    def edges(self) -> tuple[Any, ...]:
        """The values checked on the base config: both ends, or every choice."""
        return self.choices if self.kind == "choices" else (self.low, self.high)


def apply(base: RunConfig, values: Mapping[str, Any]) -> RunConfig:
    """``base`` with each ``section.field`` set, validated by the section's dataclass."""
    changes: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        section, field = name.split(".", 1)
        changes.setdefault(section, {})[field] = value
    config = base
    for section, fields in changes.items():
        part = getattr(config, section)
        fields = {**{name: None for name in derived(part, fields)}, **fields}
        if section == "data":
            config = with_data(config, **fields)
        else:
            config = replace(config, **{section: replace(part, **fields)})
    return config


def derived(part: Any, changing: Mapping[str, Any]) -> list[str]:
    """Fields of ``part`` that default to None and hold what None resolves to: set back to
    None they resolve again from the changed fields (``model.learn_spread`` follows
    ``model.output``); a value set on purpose stays."""
    names = []
    for f in dataclasses.fields(part):
        value = getattr(part, f.name)
        if f.default is not None or value is None or f.name in changing:
            continue
        try:
            again = replace(part, **{f.name: None})
        except (ConfigError, TypeError, ValueError):
            continue
        if getattr(again, f.name) == value:
            names.append(f.name)
    return names


def suggest(trial: optuna.Trial, space: tuple[Param, ...]) -> dict[str, Any]:
    return {param.name: param.suggest(trial) for param in space}


def read_space(path: Path, base: RunConfig) -> tuple[Param, ...]:
    where = f"--space {path}"
    return parse_space(load_yaml(read_yaml_text(path, where), where), base, where)


def parse_space(raw: Any, base: RunConfig, where: str = "search space") -> tuple[Param, ...]:
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(
            f"{where}: expected a mapping of fields to ranges, e.g. "
            "'training.lr: {low: 1e-4, high: 1e-2, log: true}'"
        )
    space = tuple(parse_param(str(key), spec, where) for key, spec in raw.items())
    for param in space:
        for value in param.edges():
            try:
                apply(base, {param.name: value})
            except ConfigError as exc:
                raise ConfigError(f"{where}: {param.name} = {value!r}: {exc}") from None
            except (TypeError, ValueError) as exc:
                raise ConfigError(
                    f"{where}: {param.name} = {value!r}: wrong type ({exc})"
                ) from None
    return space


def parse_param(key: str, spec: Any, where: str) -> Param:
    section, _, field = key.partition(".")
    if section not in SECTIONS or not field:
        raise ConfigError(
            f"{where}: {key!r}: name a field as section.field, section one of {sorted(SECTIONS)}"
        )
    types = field_types(section)
    if field not in types:
        raise ConfigError(f"{where}: {key!r}: no such field; {section} fields: {sorted(types)}")
    if section == "model" and field in DATA_DERIVED:
        raise ConfigError(
            f"{where}: {key!r} is decided by the data; search data.{field} instead"
            if field in ("lookback", "horizon")
            else f"{where}: {key!r} is decided by the data"
        )
    if not isinstance(spec, Mapping):
        raise ConfigError(
            f"{where}: {key}: expected {{low: .., high: ..}} or {{choices: [..]}}, got {spec!r}"
        )
    if "choices" in spec:
        return _choices(key, spec, where)
    kind = {int: "int", float: "float"}.get(types[field])
    if kind is None:
        raise ConfigError(f"{where}: {key} is not numeric: give {{choices: [...]}}")
    return _range(key, kind, section, field, spec, where)


def _choices(key: str, spec: Mapping[str, Any], where: str) -> Param:
    extra = sorted(set(spec) - {"choices"})
    if extra:
        raise ConfigError(f"{where}: {key}: choices take no {extra}")
    choices = spec["choices"]
    if not isinstance(choices, list) or not choices:
        raise ConfigError(f"{where}: {key}: choices must be a non-empty list")
    section, field = key.split(".", 1)
    values = tuple(coerce(section, field, value) for value in choices)
    if not all(isinstance(value, SCALARS) for value in values):
        raise ConfigError(f"{where}: {key}: choices must be numbers, text, true/false or null")
    if len(set(map(repr, values))) != len(values):
        raise ConfigError(f"{where}: {key}: a choice is repeated")
    return Param(name=key, kind="choices", choices=values)


def _range(
    key: str, kind: str, section: str, field: str, spec: Mapping[str, Any], where: str
) -> Param:
    unknown = sorted(set(spec) - RANGE_KEYS)
    if unknown or "low" not in spec or "high" not in spec:
        raise ConfigError(
            f"{where}: {key}: give low and high (and optionally log, step)"
            + (f"; unknown keys {unknown}" if unknown else "")
        )
    low, high, step = (coerce(section, field, spec.get(k)) for k in ("low", "high", "step"))
    log = spec.get("log", False)
    numbers = [v for v in (low, high, step) if v is not None]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers):
        raise ConfigError(f"{where}: {key}: low, high and step must be numbers")
    if kind == "int" and not all(isinstance(v, int) for v in numbers):
        raise ConfigError(
            f"{where}: {key} is an integer field: low, high and step must be integers"
        )
    if not all(math.isfinite(v) for v in numbers):
        raise ConfigError(f"{where}: {key}: low, high and step must be finite")
    if not isinstance(log, bool):
        raise ConfigError(f"{where}: {key}: log must be true or false")
    if not low < high:
        raise ConfigError(f"{where}: {key}: low ({low}) must be below high ({high})")
    if log and low <= 0:
        raise ConfigError(f"{where}: {key}: a log range needs low > 0, got {low}")
    if step is not None and (step <= 0 or log):
        raise ConfigError(f"{where}: {key}: step must be > 0 and cannot go with log")
    return Param(name=key, kind=kind, low=low, high=high, log=log, step=step)
