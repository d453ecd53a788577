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
