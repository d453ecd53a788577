"""Quantization-aware training settings: what a QAT run does beyond an FP32 one."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from foxhunt.config_fields import Range, check_known_fields, setting
from foxhunt.errors import ConfigError

#: The activation grids of torch's CPU int8 engines, by the engine's name (``QATConfig.backend``).
Backend = Literal["x86", "fbgemm", "onednn", "qnnpack"]
BACKENDS: tuple[str, ...] = get_args(Backend)
ACTIVATION_MAX = {"onednn": 255, "qnnpack": 255, "x86": 127, "fbgemm": 127}
#: How the LSTM layers are quantized (see ``QATConfig.lstm``).
LSTMMode = Literal["int8-weights", "fp32"]
LSTM_MODES: tuple[str, ...] = get_args(LSTMMode)


@dataclass(frozen=True, kw_only=True)
class QATConfig:
    """How ``prepare_qat`` fake-quantizes a TFT (see docs/QAT_GUIDE.md)."""

    freeze_after: int = setting(200, range=Range(1))
    """Training steps (train-mode forward passes) during which the observers track weight and
    activation ranges; after them every scale and zero point is frozen and only the weights
    keep learning under fixed quantization grids (>= 1)."""
    backend: Backend = "onednn"
    """The int8 engine whose activation grid QAT simulates, named as torch's CPU engines:
    "onednn"/"qnnpack": 8-bit activations (0..255); "x86"/"fbgemm": 7-bit (0..127, what
    engines without VNNI use so that int16 pair sums cannot saturate). Weights are int8 per
    output channel either way. foxhunt's int8 kernel and the ONNX export compute both grids
    exactly on AVX2 and AVX-512 CPUs alike; 8-bit is the finer grid."""
    lstm: LSTMMode = "int8-weights"
    """LSTM layers: "int8-weights" fake-quantizes their weights (per gate unit) and stores
    them int8, computed by the FP32 LSTM kernel (exactly what QAT simulated); "fp32"
    leaves them alone. (A run saved with "dynamic", torch.ao's int8 LSTM, reads as
    "int8-weights": foxhunt/migrations.py.)"""

    def __post_init__(self) -> None:
        n = self.freeze_after
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(
                f"QATConfig.freeze_after={n!r}: must be an int >= 1 (training steps of observer "
                "warm-up), e.g. a few hundred"
            )
        if self.backend not in BACKENDS:
            raise ConfigError(f"QATConfig.backend={self.backend!r}: use one of {BACKENDS}")
        if self.lstm not in LSTM_MODES:
            hint = (
                ' ("dynamic" is gone with torch.ao\'s int8 LSTM)' if self.lstm == "dynamic" else ""
            )
            raise ConfigError(f"QATConfig.lstm={self.lstm!r}: use one of {LSTM_MODES}{hint}")

    @property
    def activation_max(self) -> int:
        """Top of the activation grid (255 or 127) that ``backend`` stands for."""
        return ACTIVATION_MAX[self.backend]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QATConfig:
        """Today's fields (qat.json of an earlier format is migrated by its reader)."""
        check_known_fields(cls, data, "QATConfig")
        return cls(**data)
