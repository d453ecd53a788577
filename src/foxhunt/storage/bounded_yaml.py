"""YAML inputs within bounds (a config or a search space is a few hundred bytes, 3 levels
deep): the size before reading, the nesting and the size with every alias expanded before
parsing, so a huge file, an alias bomb or ``[[[[...]]]]`` is one line, not a hang or a
RecursionError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from foxhunt.errors import ConfigError
from foxhunt.storage.bounded import UnsafeFileError, read_bytes_bounded

YAML_LIMIT = 1 << 20
YAML_MAX_DEPTH = 32
YAML_MAX_NODES = 100_000


def read_yaml_text(path: Path, where: str) -> str:
    """The text of a YAML input, at most ``YAML_LIMIT`` bytes (size checked before reading)."""
    try:
        return read_bytes_bounded(Path(path), YAML_LIMIT).decode()
    except UnsafeFileError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read it ({exc})") from None


def load_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` within bounds: nesting and the size with every alias expanded are
    counted on the event stream first (no recursion), so an alias bomb or ``[[[[...]]]]``
    is one line, not a hang or a RecursionError."""
    try:
        _check_yaml_shape(text, where)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())
        raise ConfigError(f"{where}: not valid YAML ({first})") from None


def _check_yaml_shape(text: str, where: str) -> None:
    sizes: dict[str, int] = {}  # anchor -> nodes it expands to
    open_: list[tuple[str | None, int]] = [(None, 0)]  # collections being read: anchor, nodes
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            open_.append((event.anchor, 1))
            if len(open_) > YAML_MAX_DEPTH:
                raise ConfigError(f"{where}: nested deeper than {YAML_MAX_DEPTH} levels")
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes = open_.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, nodes = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            anchor, nodes = None, sizes.get(str(event.anchor), 1)
        else:
            continue
        if anchor is not None:
            sizes[anchor] = nodes
        parent, total = open_[-1]
        open_[-1] = (parent, total + nodes)
        if total + nodes > YAML_MAX_NODES:
            raise ConfigError(
                f"{where}: more than {YAML_MAX_NODES} values once its aliases (*name) are "
                "expanded; write the config out plainly"
            )
