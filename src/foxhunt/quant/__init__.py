"""Quantization of the TFT as transforms: QAT (``prepare_qat`` / ``convert``), post-training
dynamic int8 (``quantize_dynamic``), and int8 exports. See docs/QAT_GUIDE.md."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from foxhunt.quant.config import QATConfig

if TYPE_CHECKING:
    from foxhunt.quant.schedule import ObserverSchedule, schedule_of
    from foxhunt.quant.transform import (
        convert,
        int8_structure,
        plan,
        prepare_qat,
        quantize_dynamic,
    )

__all__ = [
    "ObserverSchedule",
    "QATConfig",
    "convert",
    "int8_structure",
    "plan",
    "prepare_qat",
    "quantize_dynamic",
    "schedule_of",
]

#: the names that need torch, imported on first use: the config alone imports none (the
#: CLI's --help reads it)
_LAZY = {
    "ObserverSchedule": "foxhunt.quant.schedule",
    "schedule_of": "foxhunt.quant.schedule",
    **dict.fromkeys(
        ("convert", "int8_structure", "plan", "prepare_qat", "quantize_dynamic"),
        "foxhunt.quant.transform",
    ),
}


def __getattr__(name: str) -> Any:  # PEP 562
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
