"""Command-line arguments generated from config dataclasses (parsed by jsonargparse).

Each field of a section's dataclass becomes one argument whose default is the field's default,
whose type is the field's annotation (``Literal`` choices, tuples, ``None``), whose help is
the field's docstring and whose range, positional place and bare value come from its
``config_fields.setting`` metadata; its key is ``section.field``, as in config.json and YAML
configs, and its flat dashed name (``--hidden-size``) is an alias wherever it is unique. A
field added to a config is thus a flag, a YAML key and a ``--print-config`` line with no CLI
code. Every subcommand's arguments come from here (``cli/resolve.py`` builds and parses them).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from foxhunt.config_fields import Range, field_range


@dataclass(frozen=True)
class Section:
    """The fields of ``cls`` as the arguments ``name.<field>`` (``name`` "" = top level)."""

    name: str
    cls: type
    exclude: tuple[str, ...] = ()  # fields that are not user settings (set by the code)
    prefix: str = ""  # flat names are --<prefix><field-with-dashes>
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # field -> extra flags
    only: tuple[str, ...] = ()  # the fields a command uses (default: all but `exclude`)

    def key(self, name: str) -> str:
        return f"{self.name}.{name}" if self.name else name

    def fields(self) -> Iterator[tuple[dataclasses.Field[Any], Any]]:
        hints = typing.get_type_hints(self.cls)
        for f in dataclasses.fields(self.cls):
            wanted = f.name in self.only if self.only else f.name not in self.exclude
            if wanted and f.init:
                yield f, hints[f.name]


@dataclass(frozen=True)
class Arg:
    """One generated argument: its key, type, default, flags and what its field's metadata
    says (``config_fields.setting``)."""

    key: str
    hint: Any
    default: Any
    flags: tuple[str, ...]  # the first is the name errors use
    range: Range | None = None  # a number's bounds
    positional: bool = False  # also the command's bare argument (``predict RUN_DIR``)
    bare: str | None = None  # the value of the flag given alone (``--json`` = "-")

    @property
    def flag(self) -> str:
        return self.flags[0]

    @property
    def name(self) -> str:
        """How errors name it: its flag, or for a positional, its place (RUN_DIR)."""
        return self.key.rpartition(".")[2].upper() if self.positional else self.flag


def field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None  # a required field: None until given (the config then refuses it)


@functools.cache
def field_docs(cls: type) -> Mapping[str, str]:
    """Each field's documentation: a Google-style ``Attributes:`` entry or the docstring
    under the field (docstring-parser reads both), a base class's for the fields it defines.
    Read once per class: parsing the source was half the cost of building a command's
    parser, paid on every command."""
    import docstring_parser

    docs: dict[str, str] = {}
    for c in reversed(cls.__mro__):
        if dataclasses.is_dataclass(c):
            for p in docstring_parser.parse_from_object(c).params:
                if p.description:
                    docs[p.arg_name] = " ".join(p.description.split())
    return MappingProxyType(docs)


def is_bool(hint: Any) -> bool:
    return hint is bool or (is_optional(hint) and bool in typing.get_args(hint))


def is_optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)  # X | None, Optional[X]


def number_kind(hint: Any) -> type | None:
    """int or float for a numeric field (also ``| None``), else None."""
    if tuple_item(hint) is not None:
        return None
    for h in (hint, *typing.get_args(hint)):
        if h in (int, float) and h is not bool:
            return h
    return None


def tuple_item(hint: Any) -> Any:
    """The item type of a ``tuple[X, ...]`` (also inside ``| None``), else None."""
    for h in (hint, *typing.get_args(hint)):
        if typing.get_origin(h) is tuple:
            return typing.get_args(h)[0]
    return None


def is_path(hint: Any) -> bool:
    return hint is Path or Path in typing.get_args(hint)


def flat_name(s: Section, f: dataclasses.Field[Any]) -> str:
    return f"--{s.prefix}{f.name.replace('_', '-')}"


def arguments(sections: Sequence[Section], taken: set[str]) -> list[Arg]:
    """The arguments of ``sections``; a flat name already in ``taken`` (or used twice) is left
    out, so that field keeps only its ``--section.field`` name."""
    args = []
    flat_count: dict[str, int] = {}
    for s in sections:
        for f, _ in s.fields():
            flat_count[flat_name(s, f)] = flat_count.get(flat_name(s, f), 0) + 1
    for s in sections:
        for f, hint in s.fields():
            key, flat = s.key(f.name), flat_name(s, f)
            names = list(s.aliases.get(f.name, ()))
            if not names and flat_count[flat] == 1 and flat not in taken:
                names.append(flat)
            names.append(f"--{key}")  # the spelling the parser reads (spellings.py)
            taken.update(names)
            kind = number_kind(hint)
            meta = f.metadata
            args.append(
                Arg(
                    key,
                    hint,
                    field_default(f),
                    tuple(dict.fromkeys(names)),
                    range=None if kind is None else field_range(f, kind),
                    positional=bool(meta.get("positional")),
                    bare=meta.get("bare"),
                )
            )
    return args


def add_arguments(
    parser: Any, sections: Sequence[Section], args: Sequence[Arg], kind: Callable[[Arg], Any]
) -> None:
    """Each field of ``sections`` as an argument whose ``type`` is ``kind(arg)``, the check
    every value passes (``cli/checks.FieldType``)."""
    by_key = {a.key: a for a in args}
    for s in sections:
        docs = field_docs(s.cls)
        group = parser.add_argument_group(s.name or "arguments", f"{s.cls.__name__} fields")
        for f, _ in s.fields():
            arg = by_key[s.key(f.name)]
            group.add_argument(
                *arg.flags,
                dest=arg.key,
                type=kind(arg),
                default=arg.default,
                help=docs.get(f.name, ""),
                metavar=arg.name if arg.positional else None,
            )
