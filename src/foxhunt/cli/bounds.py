"""One range check for every numeric flag of every subcommand.

`apply_bounds(parser)` wraps each `type=int` / `type=float` converter after the subcommands
have registered, so a flag added later is checked too: floats must be finite, and every
number must lie in its range (a flag not listed below: ints >= 1, floats >= 0). argparse
then reports the flag's name: "argument --lr: must be > 0, got 0".
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

from foxhunt.errors import FoxhuntError


@dataclass(frozen=True)
class Range:
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


INT_DEFAULT = Range(1)
FLOAT_DEFAULT = Range(0)
FRACTION = Range(0, 1, high_open=True)
# Upper bounds keep a typo (an extra zero or three) from turning into an hours-long hang.
RANGES: dict[str, Range] = {
    "--seed": Range(0, 2**63 - 1),
    "--synthetic-seed": Range(0, 2**63 - 1),
    "--patience": Range(0),
    "--num-workers": Range(0, 256),
    "--qat-freeze-after": Range(0),
    "--warmup": Range(0, 10_000),
    "--warmup-steps": Range(0),
    "--warmup-fraction": FRACTION,
    "--steps": Range(1, 100_000),
    "--threads": Range(1, 4096),
    "--lr": Range(0, low_open=True),
    "--dist-timeout": Range(0, low_open=True),
    "--memory-limit-gb": Range(0, low_open=True),
    "--dropout": FRACTION,
    "--initial-confidence": FRACTION,
    "--fast-window": Range(0, 100_000),
    "--val-fraction": FRACTION,
    "--test-fraction": FRACTION,
    "--synthetic-days": Range(1, 10_000),
    "--lookback": Range(1, 100_000),
    "--horizon": Range(1, 10_000),
    "--epochs": Range(1, 1_000_000),
    "--opset": Range(18, 30),
    "--attention-heads": Range(1, 4096),
    "--sampler-seed": Range(0, 2**63 - 1),
    "--startup-trials": Range(0),
    "--heartbeat": Range(1, 86_400),
}


def checked(kind: Callable[[str], float], bounds: Range) -> Callable[[str], float]:
    def convert(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if not bounds.holds(value):
            raise argparse.ArgumentTypeError(f"must be {bounds.describe()}, got {text}")
        return value

    convert.__name__ = kind.__name__  # argparse names the converter in some messages
    return convert


def apply_bounds(parser: argparse.ArgumentParser) -> None:
    """Wrap the numeric converters of `parser` and of all its subparsers, recursively."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                apply_bounds(sub)
        elif action.type in (int, float) and action.option_strings:
            name = max(action.option_strings, key=len)
            default = INT_DEFAULT if action.type is int else FLOAT_DEFAULT
            action.type = checked(action.type, RANGES.get(name, default))
        elif callable(action.type):
            action.type = explained(action.type)


def explained(kind: Callable[[str], object]) -> Callable[[str], object]:
    """A converter whose FoxhuntError message reaches the user (argparse would otherwise
    print only "invalid parse_budget value")."""

    def convert(text: str) -> object:
        try:
            return kind(text)
        except FoxhuntError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(kind, "__name__", "value")
    return convert
