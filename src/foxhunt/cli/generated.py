"""Command-line arguments generated from config dataclasses (jsonargparse).

Each field of a section's dataclass becomes one argument whose default is the field's default,
whose type is the field's annotation (``Literal`` choices, tuples, ``None``) and whose help is
the field's docstring; its key is ``section.field``, as in config.json and YAML configs, and
its flat dashed name (``--hidden-size``) is an alias wherever it is unique. A field added to a
config is thus a flag, a YAML key and a ``--print-config`` line with no CLI code.

The spellings that are not plain ``--name VALUE`` (``--no-calibrate``, ``--qat``,
``--quantiles 0.1,0.5,0.9``, ``--max-gap none``) are rewritten to it before parsing
(``normalize``); old flags whose meaning maps onto another field are ``Spelling`` entries.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from foxhunt.cli.bounds import FLOAT_DEFAULT, RANGES, Range
from foxhunt.errors import UsageError

BOOLS = {"true", "false", "null", "yes", "no"}


@dataclass(frozen=True)
class Section:
    """The fields of ``cls`` as the arguments ``name.<field>`` (``name`` "" = top level)."""

    name: str
    cls: type
    exclude: tuple[str, ...] = ()  # fields that are not user settings (set by the code)
    prefix: str = ""  # flat names are --<prefix><field-with-dashes>
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # field -> extra flags

    def key(self, name: str) -> str:
        return f"{self.name}.{name}" if self.name else name

    def fields(self) -> Iterator[tuple[dataclasses.Field[Any], Any]]:
        hints = typing.get_type_hints(self.cls)
        for f in dataclasses.fields(self.cls):
            if f.name not in self.exclude and f.init:
                yield f, hints[f.name]


@dataclass(frozen=True)
class Arg:
    """One generated argument: its key, type, default, flags."""

    key: str
    hint: Any
    default: Any
    flags: tuple[str, ...]  # the first is the name errors use

    @property
    def flag(self) -> str:
        return self.flags[0]


def field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None  # a required field: None until given (the config then refuses it)


@functools.cache
def field_docs(cls: type) -> Mapping[str, str]:
    """Each field's documentation: a Google-style ``Attributes:`` entry or the docstring
    under the field (docstring-parser reads both). Read once per class: parsing the source
    was half the cost of building a command's parser, paid on every command."""
    import docstring_parser

    docs = {}
    for p in docstring_parser.parse_from_object(cls).params:
        if p.description:
            docs[p.arg_name] = " ".join(p.description.split())
    return MappingProxyType(docs)


def arguments(sections: Sequence[Section], taken: set[str]) -> list[Arg]:
    """The arguments of ``sections``; a flat name already in ``taken`` (or used twice) is left
    out, so that field keeps only its ``--section.field`` name."""
    args = []
    flat_count: dict[str, int] = {}
    for s in sections:
        for f, _ in s.fields():
            name = f"--{s.prefix}{f.name.replace('_', '-')}"
            flat_count[name] = flat_count.get(name, 0) + 1
    for s in sections:
        for f, hint in s.fields():
            key = s.key(f.name)
            flat = f"--{s.prefix}{f.name.replace('_', '-')}"
            extra = s.aliases.get(f.name, ())
            names = [*extra] if extra else []
            if not extra and flat_count[flat] == 1 and flat not in taken:
                names.append(flat)
            names.append(f"--{key}")
            taken.update(names)
            args.append(Arg(key, hint, field_default(f), tuple(dict.fromkeys(names))))
    return args


def add_arguments(parser: Any, sections: Sequence[Section], args: Sequence[Arg]) -> None:
    docs = {s.name: field_docs(s.cls) for s in sections}
    for s in sections:
        group = parser.add_argument_group(s.name or "run", f"{s.cls.__name__} fields")
        for f, _ in s.fields():
            arg = next(a for a in args if a.key == s.key(f.name))
            help_text = docs[s.name].get(f.name, "")
            group.add_argument(
                *arg.flags, dest=arg.key, type=arg.hint, default=arg.default, help=help_text
            )


# --- spellings: argv rewritten to --key VALUE before parsing ----------------------------------


@dataclass(frozen=True)
class Spelling:
    """An old flag that sets other keys: ``expand(value)`` -> [(key, value text)];
    ``takes_value`` False for a bare switch."""

    flag: str
    expand: Callable[[str], list[tuple[str, str]]]
    takes_value: bool = True
    #: repeated, its values make one list (``--logger tensorboard --logger mlflow``): the
    #: flag sets the single key ``expand`` names to the list of every value given
    accumulate: bool = False


def is_bool(hint: Any) -> bool:
    return hint is bool or (_is_optional(hint) and bool in typing.get_args(hint))


def _is_optional(hint: Any) -> bool:
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


def list_text_wanted(hint: Any, text: str) -> bool:
    """Whether a flag's text is a list's comma form: always for a tuple (``| None``) field,
    with a comma for one that may also be a scalar (``"full" | tuple[...]``)."""
    if text.lstrip().startswith("["):
        return False
    others = [h for h in typing.get_args(hint) if h is not type(None)]
    return typing.get_origin(hint) is tuple or len(others) == 1 or "," in text


def list_text(text: str, item: Any) -> str:
    """ "a,b" -> '["a", "b"]' (str items) or "[0.1,0.5]"; YAML/JSON lists pass unchanged."""
    if text.lstrip().startswith("["):
        return text
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return json.dumps(parts) if item is str else "[" + ",".join(parts) + "]"


def normalize(argv: Sequence[str], args: Sequence[Arg], spellings: Sequence[Spelling]) -> list[str]:
    """``argv`` with every flag as ``--key VALUE``: bare and ``--no-`` switches, comma lists,
    ``none`` for None and the old ``spellings`` rewritten; unknown tokens pass through (the
    parser names them)."""
    by_flag = {flag: a for a in args for flag in a.flags}
    special = {s.flag: s for s in spellings}
    out: list[str] = []
    gathered: dict[str, list[str]] = {}  # accumulating spellings: key -> values
    i = 0
    while i < len(argv):
        token, i = argv[i], i + 1
        flag, eq, inline = token.partition("=")
        value = inline if eq else None
        take = functools.partial(_take, argv, value)

        if flag in special:
            s = special[flag]
            text, i = take(i) if s.takes_value else ("", i)
            if text is None:
                raise UsageError(f"{flag} needs a value")
            for key, v in s.expand(text):
                if s.accumulate:
                    gathered.setdefault(key, []).append(v)
                else:
                    out += [f"--{key}", v]
            continue
        negated = flag.startswith("--no-") and by_flag.get("--" + flag[5:])
        arg = negated or by_flag.get(flag)
        if arg is None:
            out.append(token)
            continue
        if is_bool(arg.hint):
            if negated:
                out += [f"--{arg.key}", "false"]
                continue
            nxt = value if value is not None else (argv[i] if i < len(argv) else "")
            if nxt.lower() in BOOLS:
                i += value is None
                out += [f"--{arg.key}", nxt.lower()]
            else:
                out += [f"--{arg.key}", "true"]
            continue
        text, i = take(i)
        if text is None:
            out.append(f"--{arg.key}")  # the parser says a value is missing
            continue
        if _is_optional(arg.hint) and text.lower() == "none":
            text = "null"
        elif (item := tuple_item(arg.hint)) is not None and list_text_wanted(arg.hint, text):
            text = list_text(text, item)
        out += [f"--{arg.key}", text]
    for key, values in gathered.items():
        out += [f"--{key}", json.dumps(values)]
    return out


def _take(argv: Sequence[str], inline: str | None, i: int) -> tuple[str | None, int]:
    """A flag's value: given after "=", else the next token unless it is a flag."""
    if inline is not None:
        return inline, i
    if i < len(argv) and not argv[i].startswith("--"):
        return argv[i], i + 1
    return None, i


# --- values checked after parsing ---------------------------------------------------------


def check_numbers(
    values: dict[str, Any], args: Sequence[Arg], spellings: Sequence[Spelling] = ()
) -> None:
    """Every number finite and, where the user changed it, in its ``cli/bounds.py`` range
    (keyed by flat flag name; an unlisted int must be >= 1 and a float >= 0, or at least its
    default)."""
    for arg in args:
        value = values.get(arg.key)
        bounds = next((RANGES[f] for f in arg.flags if f in RANGES), None)
        also = [s.flag for s in spellings if arg.key in dict(s.expand("1")) and s.flag != arg.flag]
        if also:  # name the old flag that set it as well (--seed sets the synthetic seed)
            arg = dataclasses.replace(arg, flags=(f"{arg.flag} (or {', '.join(also)})",))
        items = value if isinstance(value, tuple | list) else (value,)
        for v in items:
            if isinstance(v, float) and not math.isfinite(v):
                raise UsageError(f"{where(arg)}: must be a finite number, got {v}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value == arg.default:
            continue
        if bounds is None:
            low = 1 if isinstance(value, int) else FLOAT_DEFAULT.low
            if isinstance(arg.default, int | float) and not isinstance(arg.default, bool):
                low = min(low, arg.default)
            bounds = Range(low)
        if not bounds.holds(value):
            raise UsageError(f"{where(arg)}: must be {bounds.describe()}, got {value}")


def where(arg: Arg) -> str:
    return arg.flag if arg.flag == f"--{arg.key}" else f"{arg.flag} ({arg.key})"


def explain(message: str, args: Sequence[Arg]) -> str:
    """jsonargparse's error as one line naming the flag: 'Parser key "training.lr": Expected
    a <class 'float'>. Got value: inf' -> '--lr (training.lr): expected a finite number, ...'."""
    text = " ".join(message.split())
    found = re.search(r'Parser key "([^"]+)"', text)
    arg = next((a for a in args if found and a.key == found.group(1)), None)
    if arg is None:
        return text.replace("Option '", "unknown key '")
    got = re.search(r"Got value: (.*?)(?: - | Given value|$)", text)
    expected = re.search(r"Expected a (.*?)\. Got value", text)
    return (
        f"{where(arg)}: expected {expectation(expected.group(1) if expected else text)}, got "
        + (got.group(1) if got else "?")
    )


def expectation(text: str) -> str:
    """jsonargparse's type in words: "<class 'float'>" -> "a finite number"."""
    words = {"<class 'float'>": "a finite number", "<class 'int'>": "an integer"}
    if text in words:
        return words[text]
    choices = re.search(r"Literal\[(.*?)\]", text)
    if choices:
        return "one of " + choices.group(1).replace("'", "")
    return text
