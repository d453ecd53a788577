"""Values checked after parsing, and the parser's errors as one line naming the flag."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

from foxhunt.cli.generated import Arg
from foxhunt.cli.spellings import Spelling
from foxhunt.errors import UsageError


def check_numbers(
    values: dict[str, Any], args: Sequence[Arg], spellings: Sequence[Spelling] = ()
) -> None:
    """Every number finite and, where the user changed it, in its field's range
    (``config_fields.setting``; without one, ints >= 1 and floats >= 0 or its default)."""
    for arg in args:
        value = values.get(arg.key)
        also = [s.flag for s in spellings if arg.key in dict(s.expand("1")) and s.flag != arg.flag]
        if also:  # name the old flag that set it as well (--seed sets the synthetic seed)
            arg = dataclasses.replace(arg, flags=(f"{arg.flag} (or {', '.join(also)})",))
        items = value if isinstance(value, tuple | list) else (value,)
        for v in items:
            if isinstance(v, float) and not math.isfinite(v):
                raise UsageError(f"{where(arg)}: must be a finite number, got {v}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value != arg.default and arg.range is not None and not arg.range.holds(value):
            raise UsageError(f"{where(arg)}: must be {arg.range.describe()}, got {value}")


def where(arg: Arg) -> str:
    return arg.name if arg.name == f"--{arg.key}" else f"{arg.name} ({arg.key})"


def explain(message: str, args: Sequence[Arg]) -> str:
    """jsonargparse's error as one line naming the flag: 'Parser key "training.lr": Expected
    a <class 'float'>. Got value: inf' -> '--lr (training.lr): expected a finite number, ...'."""
    text = " ".join(message.split())
    found = re.search(r'Parser key "([^"]+)"', text)
    arg = next((a for a in args if found and a.key == found.group(1)), None)
    if arg is None:
        return text.replace("Option '", "unknown key '")
    got = re.search(r"Got value: (.*?)(?: - | Given value|$)", text)
    if "Union subtypes" in text:  # int | Literal["auto"] | None: each kind it may be
        got = re.search(r"Given value:(?: (.*))?$", text)
        kinds = re.findall(r"- Expected a (.*?)(?= - | Given value|$)", text)
        words = [expectation(k.strip()).removeprefix("one of ") for k in kinds]
        wanted = ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else words[0]
    else:
        expected = re.search(r"Expected a (.*?)\. Got value", text)
        wanted = expectation(expected.group(1) if expected else text)
    value = (got.group(1) or "") if got else "?"
    return f"{where(arg)}: expected {wanted}, got {value or repr(value)}"


def expectation(text: str) -> str:
    """jsonargparse's type in words: "<class 'float'>" -> "a finite number"."""
    words = {
        "<class 'float'>": "a finite number",
        "<class 'int'>": "an integer",
        "<class 'NoneType'>": "none",
    }
    if text in words:
        return words[text]
    choices = re.search(r"Literal\[(.*?)\]", text)
    if choices:
        return "one of " + choices.group(1).replace("'", "")
    return text
