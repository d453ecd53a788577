"""Quantization of the TFT as transforms: QAT (``prepare_qat`` / ``convert``), post-training
dynamic int8 (``quantize_dynamic``), and int8 exports. See docs/QAT_GUIDE.md."""

from foxhunt.quant.config import QATConfig
from foxhunt.quant.schedule import ObserverSchedule, schedule_of
from foxhunt.quant.transform import convert, int8_structure, plan, prepare_qat, quantize_dynamic

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
