"""The hooks the command line's errors come from, pinned against the installed jsonargparse.

No message of jsonargparse's is read back (cli/checks.py): a value is checked by the field's
``FieldType`` (argparse's ``type`` hook), whose ``UsageError`` must reach the caller as it is,
and what the parser refuses itself reaches ``Parser.error`` with argparse's ``ArgumentError``
naming the argument. If an upgrade changes either, or starts reading a value differently
from the field's check, these fail rather than the messages silently going vague.
"""

from __future__ import annotations

import argparse
import math
import typing
from pathlib import Path
from typing import Any

import pytest
from jsonargparse import ArgumentParser

from foxhunt.cli import commands
from foxhunt.cli.checks import FieldType, parser_class
from foxhunt.cli.generated import Arg
from foxhunt.cli.resolve import resolve
from foxhunt.cli.train_config import train_command
from foxhunt.config_fields import Mismatch, value_as
from foxhunt.errors import UsageError

#: every annotation a command's flag has
HINTS = {repr(a.hint): a.hint for c in commands().values() for a in c.args}

#: values as YAML or JSON give them, and as a flag's text
SAMPLES: list[Any] = [None, "null", True, "true", "yes", "off", 0, 1, "1", -3, " 2 ", 1.5,
                      "1.5", "1e-3", ".5", "x", "", [1, 2], "[1, 2]", ["a"], "[a, b]", "auto",
                      "full", "none", "cpu", "tensorboard", ["past_vsn"], "[past_vsn]", "inf",
                      math.inf, "1_000", "+5"]  # fmt: skip


def theirs(hint: Any, value: Any, text: bool) -> tuple[bool, Any]:
    """jsonargparse's own reading of ``value`` for a ``hint`` argument: (taken?, value)."""
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--x", type=str | None if hint == Path | None else hint, default=None)
    try:
        cfg = parser.parse_args(["--x", value]) if text else parser.parse_object({"x": value})
    except argparse.ArgumentError:
        return False, None
    return True, cfg.x


def ours(hint: Any, value: Any) -> tuple[bool, Any]:
    try:
        return True, value_as(hint, value)
    except Mismatch:
        return False, None


@pytest.mark.parametrize("name", sorted(HINTS))
def test_each_field_type_reads_values_as_jsonargparse_does(name: str) -> None:
    """The field's check takes what jsonargparse's type hints take, as the same value, so
    handing it the ``type`` hook changed no config that parsed before. One difference, on
    purpose: a null for a field that cannot be None is refused (jsonargparse reads it as unset
    and the dataclass got None)."""
    hint = HINTS[name]
    for value in SAMPLES:
        for text in (False, True) if isinstance(value, str) else (False,):
            if value is None and type(None) not in typing.get_args(hint):
                assert not ours(hint, value)[0]
                continue
            assert ours(hint, value) == theirs(hint, value, text), (name, value, text)


def test_a_field_types_error_passes_through_the_parser_as_it_is() -> None:
    """FieldType raises UsageError, which jsonargparse must not catch or re-word: from a
    flag (parse_args) and from a config or preset (parse_object)."""
    arg = Arg("epochs", int, 3, ("--epochs",))
    parser = parser_class()(exit_on_error=False)
    parser.add_argument("--epochs", dest="epochs", type=FieldType(arg), default=3)
    for parse in (lambda: parser.parse_args(["--epochs", "x"]),
                  lambda: parser.parse_object({"epochs": "x"})):  # fmt: skip
        with pytest.raises(UsageError) as refused:
            parse()
        assert str(refused.value) == "--epochs: expected an integer, got x"
        assert refused.type is UsageError and refused.value.__cause__ is None
        assert refused.traceback[-1].name == "__call__"  # raised by FieldType, not re-raised


def test_what_the_parser_refuses_itself_comes_with_its_argument() -> None:
    """``error(message, ex)``: a flag without its value arrives as argparse's ArgumentError
    whose ``argument_name`` and ``message`` Parser.error reads (not the text of ``message``)."""
    seen: list[tuple[str, Exception | None]] = []

    class Watched(parser_class()):  # type: ignore[misc]
        def error(self, message: str, ex: Exception | None = None) -> typing.NoReturn:
            seen.append((message, ex))
            super().error(message, ex)

    parser = Watched(exit_on_error=False, names={"--epochs": "--epochs (training.epochs)"})
    parser.add_argument("--epochs", "--training.epochs", dest="training.epochs", type=int)
    with pytest.raises(UsageError, match=r"^--epochs \(training.epochs\): expected one argument$"):
        parser.parse_args(["--epochs"])
    ((_, ex),) = seen
    assert isinstance(ex, argparse.ArgumentError)
    assert ex.argument_name == "--epochs/--training.epochs" and ex.message


def test_a_field_types_repr_is_the_type_help_shows() -> None:
    text = build_help(train_command())
    assert "(type: int | Literal['auto'] | null, default: null)" in " ".join(text.split())


def build_help(command: Any) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        resolve(command, ["--help"])
    return out.getvalue()
