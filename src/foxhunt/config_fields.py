"""Shared by the config dataclasses: what a field knows beyond its type and default.

A field declared with ``setting(default, range=...)`` carries its numeric range (checked by
the command line, which names the flag, and by ``check_ranges`` in the class's
``__post_init__``). So a new field is one definition (plus its line in the class docstring):
the flag, its bound check and its help all come from it (docs/configuration.md); what runs
saved before it existed read it as is a migration (``foxhunt/migrations.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from foxhunt.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """The values a number may take: [low, high], each end open or closed."""

    low: float
    high: float = math.inf
    low_open: bool = False  # True: the value must be > low
    high_open: bool = False  # True: the value must be < high

    def describe(self) -> str:
        low = f"> {self.low:g}" if self.low_open else f">= {self.low:g}"
        if math.isinf(self.high):
            return low
        high = f"< {self.high:g}" if self.high_open else f"<= {self.high:g}"
        return f"{low} and {high}"

    def holds(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below


#: A share of something, in [0, 1).
FRACTION = Range(0, 1, high_open=True)
#: A seed: any non-negative 64-bit integer.
SEED = Range(0, 2**63 - 1)
#: Positive, excluding 0 (a rate, a timeout).
POSITIVE = Range(0, low_open=True)
#: A learning rate: AdamW cannot apply one beyond float32's range (1e300 ended the range test
#: with `internal error: RuntimeError`); 1e6 is far past any rate that trains.
LEARNING_RATE = Range(0, 1e6, low_open=True)


def setting(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    range: Range | None = None,
    positional: bool = False,
    bare: str | None = None,
) -> Any:
    """A dataclass field with what the command line and the run readers need to know:
    ``range`` for a number (upper bounds keep a typo, an extra zero or three, from turning
    into an hours-long hang); ``positional``: also given as the command's bare argument (``predict RUN_DIR``);
    ``bare``: the value of the flag given without one (``--json`` = "-", stdout)."""
    metadata: dict[str, Any] = {}
    if range is not None:
        metadata["range"] = range
    if positional:
        metadata["positional"] = True
    if bare is not None:
        metadata["bare"] = bare
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def field_range(f: dataclasses.Field[Any], kind: type) -> Range:
    """The field's range; without one, ints >= 1 and floats >= 0 (or down to the default)."""
    if "range" in f.metadata:
        found: Range = f.metadata["range"]
        return found
    low: float = 1 if kind is int else 0
    if isinstance(f.default, int | float) and not isinstance(f.default, bool):
        low = min(low, f.default)
    return Range(low)


def check_ranges(config: Any, what: str) -> None:
    """ConfigError naming the first number of ``config`` outside its field's ``range``
    (``what``: how messages name the class, "DataConfig" -> "DataConfig.lookback=0: ...")."""
    for f in fields(config):
        bounds = f.metadata.get("range")
        value = getattr(config, f.name)
        if bounds is None or value is None or isinstance(value, bool):
            continue
        if isinstance(value, str) and _admits_text(config.__class__, f.name):
            continue  # a word the field allows besides numbers ("auto"): its class checks it
        if not isinstance(value, int | float):
            raise ConfigError(f"{what}.{f.name}={value!r}: must be a number")
        if not math.isfinite(value) or not bounds.holds(value):
            raise ConfigError(f"{what}.{f.name}={value!r}: must be {bounds.describe()}")


@functools.cache
def _admits_text(cls: type, name: str) -> bool:
    """Whether field `name` of `cls` is typed to take a string (a ``Literal`` word or str)."""
    hint = typing.get_type_hints(cls)[name]
    kinds = [hint, *typing.get_args(hint)]
    words = [w for k in kinds if typing.get_origin(k) is typing.Literal for w in typing.get_args(k)]
    return str in kinds or any(isinstance(w, str) for w in words)


class Mismatch(ValueError):
    """A value that is not of its field's type; ``expected`` says what would be, in words."""

    def __init__(self, expected: str, got: Any):
        super().__init__(f"expected {expected}, got {got!r}")
        self.expected, self.got = expected, got


#: the words a command line or a YAML file may spell a switch with
SWITCH_WORDS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


def value_as(hint: Any, value: Any) -> Any:
    """``value`` (as YAML or JSON loaded it, or a flag's text) as a field typed ``hint`` holds
    it: text read as the number, switch or list the type wants, a list as a tuple, a path as
    text; `Mismatch` naming what the type takes otherwise. The command line's parser calls it
    for every value (cli/checks.py), so its refusal is the field's, in its words."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _one_of(typing.get_args(hint), value)
    if origin is typing.Literal:
        choices = typing.get_args(hint)
        if any(value == c and type(value) is type(c) for c in choices):
            return value
        raise Mismatch("one of " + ", ".join(map(str, choices)), value)
    if origin is tuple:
        items = _loaded(value) if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise Mismatch(words(hint), value)
        return tuple(value_as(typing.get_args(hint)[0], v) for v in items)
    if hint is type(None) and (value is None or value == "null"):
        return None
    if hint is bool:
        found = SWITCH_WORDS.get(value.strip().lower()) if isinstance(value, str) else value
        if isinstance(found, bool):
            return found
    elif hint in (int, float) and isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = hint(value.strip())
            if math.isfinite(number):  # "inf" and "nan" are words, as YAML reads them
                return number
    elif hint in (int, float) and isinstance(value, int | float) and not isinstance(value, bool):
        if hint is float or isinstance(value, int):
            return hint(value)
    elif hint in (str, Path) and isinstance(value, str | Path):
        return str(value)  # a path stays text until the command makes it a Path
    raise Mismatch(words(hint), value)


def _one_of(kinds: tuple[Any, ...], value: Any) -> Any:
    """``value`` as the first of ``kinds`` that takes it (None first: "null" is no text)."""
    for kind in sorted(kinds, key=lambda k: k is not type(None)):
        with contextlib.suppress(Mismatch):
            return value_as(kind, value)
    said = [words(k) for k in kinds]
    raise Mismatch(", ".join(said[:-1]) + f" or {said[-1]}", value)


def _loaded(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def words(hint: Any) -> str:
    """What a field typed ``hint`` takes, in words: "an integer", "one of a, b", "none"."""
    said = {int: "an integer", float: "a finite number", bool: "true or false", str: "text"}
    if hint in said:
        return said[hint]
    if hint is Path:
        return "a path"
    if hint is type(None):
        return "none"
    origin, kinds = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(map(str, kinds))
    if origin is tuple:
        return f"a list, each {words(kinds[0])}"
    return " or ".join(words(k) for k in kinds) if kinds else str(hint)


def check_known_fields(cls: Any, data: Mapping[str, Any], what: str) -> None:
    """ConfigError naming every key of `data` that is not a field of dataclass `cls`."""
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"unknown {what} fields {unknown}; valid: {sorted(known)}")
