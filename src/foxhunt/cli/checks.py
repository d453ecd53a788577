"""Every value the parser reads, checked by its field where it is read: one line naming the flag.

jsonargparse is handed a `FieldType` as each generated argument's ``type``, the hook argparse
calls for every value (a flag's text, a config file's or a preset's value): it converts the
value as the field's annotation says (``config_fields.value_as``) and checks it against the
field's range, raising a `UsageError` that names the flag. jsonargparse lets that error pass
as it is (it catches only TypeError, ValueError and KeyError), so no message of jsonargparse's
is read back or re-worded; what is left to the parser (a flag given without its value, an
unknown flag) reaches `Parser.error` with argparse's ``ArgumentError``, whose argument names the
flag (`tests/cli/test_parser_hooks.py` pins both hooks against the installed jsonargparse).
"""

from __future__ import annotations

import difflib
import math
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from foxhunt.cli.generated import Arg, is_path
from foxhunt.cli.spellings import Spelling
from foxhunt.config_fields import Mismatch, value_as
from foxhunt.errors import UsageError


def where(arg: Arg) -> str:
    return arg.name if arg.name == f"--{arg.key}" else f"{arg.name} ({arg.key})"


def shown(value: Any) -> str:
    return value if isinstance(value, str) and value.strip() else repr(value)


class FieldType:
    """The parser's ``type`` for ``arg``: its value as the field holds it, or a `UsageError`
    naming the flag (and an old spelling that sets it too: ``--seed`` sets the synthetic
    seed). A number must be finite and, where it is not the default, in the field's range
    (``config_fields.setting``; without one, ints >= 1 and floats >= 0 or the default)."""

    def __init__(self, arg: Arg, spellings: Sequence[Spelling] = ()):
        self.arg = arg
        also = [s.flag for s in spellings if s.takes_value and arg.key in dict(s.expand("1"))]
        also = [flag for flag in also if flag not in arg.flags]
        self.name = where(arg)
        if also:
            self.name = f"{arg.name} (or {', '.join(also)}) ({arg.key})"

    def __call__(self, value: Any) -> Any:
        if value is None and self.arg.default is None:
            return None  # a required field not given yet: the command names it (check_required)
        try:
            value = value_as(self.arg.hint, value)
        except Mismatch as exc:
            raise UsageError(
                f"{self.name}: expected {exc.expected}, got {shown(exc.got)}"
            ) from None
        items = value if isinstance(value, tuple) else (value,)
        for v in items:
            if isinstance(v, float) and not math.isfinite(v):
                raise UsageError(f"{self.name}: must be a finite number, got {v}")
        bounds = self.arg.range
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and bounds is not None and value != self.arg.default and not bounds.holds(value):
            raise UsageError(f"{self.name}: must be {bounds.describe()}, got {value}")
        return value

    def __repr__(self) -> str:  # the type --help shows
        return hint_text(self.arg.hint)


def hint_text(hint: Any) -> str:
    """``int | None`` -> "int | null", ``Literal["a", "b"]`` -> "Literal['a', 'b']"."""
    origin, kinds = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, kinds))}]"
    if origin is tuple:
        return f"tuple[{hint_text(kinds[0])}, ...]"
    if kinds:  # a union
        return " | ".join(hint_text(k) for k in kinds)
    if hint is type(None):
        return "null"
    return "str" if is_path(hint) else getattr(hint, "__name__", str(hint))


def check_keys(layer: Mapping[str, Any], known: Iterable[str], args: Sequence[Arg]) -> None:
    """Refuse a key of a config ``layer`` (``{section: {field: value}}`` or a top-level key)
    that no argument has, naming it and the nearest one there is."""
    keys = set(known) | {f[2:] for a in args for f in a.flags}  # epochs: 3 is --epochs 3
    for name, value in layer.items():
        inner = value.items() if isinstance(value, dict) and name not in keys else [(None, value)]
        for field, _ in inner:
            key = name if field is None else f"{name}.{field}"
            if key not in keys:
                near = difflib.get_close_matches(key, sorted(keys), n=1)
                hint = f"; did you mean {near[0]}?" if near else ""
                raise UsageError(f"unknown key {key!r}{hint}")


def parser_class() -> type:
    """jsonargparse's ArgumentParser whose errors are `UsageError`s naming the flag (imported
    here, when a command parses, so that the top-level ``--help`` waits for no jsonargparse)."""
    import argparse

    from jsonargparse import ArgumentParser

    class Parser(ArgumentParser):
        def __init__(self, *args: Any, names: Mapping[str, str] = {}, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.names = names  # flag -> how errors name it (`where`)

        def error(self, message: str, ex: Exception | None = None) -> typing.NoReturn:
            """What the parser refuses itself: argparse's error names its argument (a flag
            given without a value); otherwise its message, on one line (unknown flags)."""
            if isinstance(ex, argparse.ArgumentError) and ex.argument_name:
                flag = ex.argument_name.split("/")[0]
                raise UsageError(f"{self.names.get(flag, flag)}: {ex.message}") from None
            raise UsageError(" ".join(message.split())) from None

    return Parser
