"""Quantization-aware training settings: what a QAT run does beyond an FP32 one."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from foxhunt.config_fields import check_known_fields
from foxhunt.errors import ConfigError

#: torch.backends.quantized engines an int8 export may target.
Backend = Literal["x86", "fbgemm", "onednn", "qnnpack"]
BACKENDS: tuple[str, ...] = get_args(Backend)
#: How the LSTM layers are quantized (see ``QATConfig.lstm``).
LSTMMode = Literal["int8-weights", "dynamic", "fp32"]
LSTM_MODES: tuple[str, ...] = get_args(LSTMMode)


@dataclass(frozen=True, kw_only=True)
class QATConfig:
    """How ``prepare_qat`` fake-quantizes a TFT (see docs/QAT_GUIDE.md)."""

    freeze_after: int = 200
    """Training steps (train-mode forward passes) during which the observers track weight and
    activation ranges; after them every scale and zero point is frozen and only the weights
    keep learning under fixed quantization grids (>= 1)."""
    backend: Backend = "onednn"
    """torch.backends.quantized engine the int8 model is packed for; picks torch's default
    QAT qconfig for it. "onednn": 8-bit activations, and the int8 model computes what the
    fake-quant model simulated (torch.ao's own int8 kernels need a CPU with VNNI for that,
    e.g. Cascade Lake / Zen 4 or newer; foxhunt's int8 kernel computes it exactly on AVX2 too).
    "x86"/"fbgemm": 7-bit activations (``reduce_range``), safe on older CPUs, but torch's
    convert does not clamp to the 7-bit range, so activations beyond the frozen range differ
    between the fake-quant and the int8 model (see docs/QAT_GUIDE.md)."""
    lstm: LSTMMode = "int8-weights"
    """LSTM layers: "int8-weights" fake-quantizes their weights (per gate unit) and stores
    them int8, computed by the FP32 LSTM kernel (exactly what QAT simulated; faster than
    torch's int8 LSTM here, see docs/QAT_GUIDE.md); "dynamic" converts them to torch's
    dynamic int8 LSTM (int8 GEMMs, per-step activation scales that QAT does not simulate);
    "fp32" leaves them alone."""

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
            raise ConfigError(f"QATConfig.lstm={self.lstm!r}: use one of {LSTM_MODES}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QATConfig:
        check_known_fields(cls, data, "QATConfig")
        return cls(**data)
