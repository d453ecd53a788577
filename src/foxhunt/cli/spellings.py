"""The command line as the parser reads it: every flag rewritten to ``--key VALUE``.

The spellings users type that are not plain ``--name VALUE`` (``--no-calibrate``, ``--qat``,
``--quantiles 0.1,0.5,0.9``, ``--max-gap none``, ``predict RUN_DIR``, a bare ``--json``) are
rewritten before jsonargparse parses the line; old flags whose meaning maps onto another
field are ``Spelling`` entries.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from foxhunt.cli.generated import Arg, is_bool, is_optional, tuple_item
from foxhunt.errors import UsageError

BOOLS = {"true", "false", "null", "yes", "no"}


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


def value_text(arg: Arg, text: str) -> str:
    """A flag's text as the parser reads the field's type: ``none`` -> null, comma lists."""
    if is_optional(arg.hint) and text.lower() == "none":
        return "null"
    if (item := tuple_item(arg.hint)) is not None and list_text_wanted(arg.hint, text):
        return list_text(text, item)
    return text


class Rewriter:
    """``normalize``'s state: the line read so far and what it has become."""

    def __init__(self, argv: Sequence[str], args: Sequence[Arg], spellings: Sequence[Spelling]):
        self.argv, self.i = argv, 0
        self.by_flag = {flag: a for a in args for flag in a.flags}
        self.special = {s.flag: s for s in spellings}
        self.places = [a for a in args if a.positional]  # bare arguments, in order
        self.out: list[str] = []
        self.gathered: dict[str, list[str]] = {}  # accumulating spellings: key -> values

    def take(self, inline: str | None) -> str | None:
        """A flag's value: given after "=", else the next token unless it is a flag."""
        if inline is not None:
            return inline
        if self.i < len(self.argv) and not self.argv[self.i].startswith("--"):
            self.i += 1
            return self.argv[self.i - 1]
        return None

    def spelled(self, s: Spelling, inline: str | None) -> None:
        text = self.take(inline) if s.takes_value else ""
        if text is None:
            raise UsageError(f"{s.flag} needs a value")
        for key, v in s.expand(text):
            if s.accumulate:
                self.gathered.setdefault(key, []).append(v)
            else:
                self.out += [f"--{key}", v]

    def switch(self, arg: Arg, negated: bool, inline: str | None) -> None:
        """A switch alone, negated (``--no-X``), or with a word of BOOLS after it or "=". Any
        other value is refused naming the switch: ``--overwrite=0`` read as the bare switch
        (on), and ``--diagnostics maybe`` was "unrecognized arguments: maybe"."""
        given = (
            inline if inline is not None else (self.argv[self.i] if self.i < len(self.argv) else "")
        )
        wanted = f"{arg.name} ({arg.key}) is a switch: give it alone, or true or false"
        if negated:
            if inline is not None:
                raise UsageError(f"{wanted}; its --no- form takes no value, got {inline!r}")
            self.out += [f"--{arg.key}", "false"]
        elif given.lower() in BOOLS:
            self.i += inline is None
            self.out += [f"--{arg.key}", given.lower()]
        elif inline is not None or (given[:1] not in ("", "-") and not self.places):
            raise UsageError(f"{wanted}, not {given!r}")  # a bare argument has no place here
        else:
            self.out += [f"--{arg.key}", "true"]

    def token(self, token: str) -> None:
        flag, eq, inline_text = token.partition("=")
        inline = inline_text if eq else None
        if flag in self.special:
            return self.spelled(self.special[flag], inline)
        negated = flag.startswith("--no-") and self.by_flag.get("--" + flag[5:])
        arg = negated or self.by_flag.get(flag)
        if arg is None:
            if not token.startswith("-") and self.places:  # predict RUN_DIR
                self.out += [f"--{self.places.pop(0).key}", token]
            else:
                self.out.append(token)  # the parser names it
        elif is_bool(arg.hint):
            self.switch(arg, bool(negated), inline)
        elif (text := self.take(inline)) is not None:
            self.out += [f"--{arg.key}", value_text(arg, text)]
        elif arg.bare is not None:  # --json alone: stdout
            self.out += [f"--{arg.key}", arg.bare]
        else:
            self.out.append(f"--{arg.key}")  # the parser says a value is missing
        return None


def normalize(argv: Sequence[str], args: Sequence[Arg], spellings: Sequence[Spelling]) -> list[str]:
    """``argv`` with every flag as ``--key VALUE``: bare and ``--no-`` switches, comma lists,
    ``none`` for None, bare arguments in their places and the old ``spellings`` rewritten;
    unknown tokens pass through (the parser names them)."""
    line = Rewriter(argv, args, spellings)
    while line.i < len(argv):
        line.i += 1
        line.token(argv[line.i - 1])
    for key, values in line.gathered.items():
        line.out += [f"--{key}", json.dumps(values)]
    return line.out
