"""Quantization of the TFT as transforms: QAT (``prepare_qat`` / ``convert``) and
post-training dynamic int8 (``quantize_dynamic``), on foxhunt's own fake quantizers
(``fake.py``, ``linear.py``, ``weights.py``; no torch.ao), the observer warm-up
(``schedule.py``), the int8 model as tensors (``serialize.py``), the int8 kernel
(``kernel.py``) and the loading of QAT runs saved under torch.ao's names (``migrate.py``).
The int8 export of a run folder is not here: ``foxhunt.exports.int8`` (it reads run folders,
a layer above). See docs/QAT_GUIDE.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foxhunt.lazy import lazy_exports
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

__getattr__ = lazy_exports(__name__, _LAZY)
