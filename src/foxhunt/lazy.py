"""Package names imported on first use (PEP 562), so that a light import stays light.

The config dataclasses the CLI reads for ``--help`` live in packages whose other names need
torch; each such package lists those names with the module that defines them, and
``lazy_exports`` returns the module ``__getattr__`` that imports one when it is first used.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, table: dict[str, str]) -> Callable[[str], Any]:
    """``__getattr__`` for ``package``: ``table`` maps a name to the module defining it."""

    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(table[name]), name)
        setattr(sys.modules[package], name, value)  # once: later look-ups skip this hook
        return value

    return __getattr__
