"""The int8 Linear layer of a QAT model (fake-quant) and of its converted model.

:class:`FakeQuantLinear` is what ``prepare_qat`` puts in place of an ``nn.Linear``: the
input, the weight and the output are fake-quantized (uint8 activations per tensor, int8
weights per output channel). :class:`QuantizedLinear` is what ``convert`` makes of it: int8
weights, float32 scales, frozen activation grids. Its own forward is the reference: it
computes in float32 exactly what the fake-quant layer computes in eval mode (the same ATen
fake-quant ops on the same grids), on any CPU or GPU. foxhunt's int8 kernel
(``quant/kernel.py``) computes the same layer with an int8 GEMM where it builds.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt.quant.fake import ActivationQuant, WeightQuant
from foxhunt.quant.weights import quantize_per_channel

#: 7-bit input grids of post-training dynamic layers, chosen per call as torch's dynamic
#: int8 Linear chose them: int32 sums of 127 * 128 products can never saturate
DYNAMIC_MAX = 127


def int8_linear_reference(
    x: Tensor,
    int8: Tensor,
    scale: Tensor,
    bias: Tensor | None,
    input_qparams: tuple[float, int],
    output_qparams: tuple[float, int] | None,
    qmax: int,
) -> Tensor:
    """The int8 Linear's math, in ATen: ``x`` rounded to its grid (scale, zero point) on
    0..``qmax``, times the int8 weight [out, in] scaled per output unit, plus ``bias``, and
    the result rounded to the output grid (None: left float). ``QuantizedLinear``'s forward
    and the decomposition of foxhunt's int8 kernel op (quant/int8_op.py)."""
    y = F.linear(on_grid(x, *input_qparams, qmax), int8.to(scale.dtype) * scale[:, None], bias)
    return y if output_qparams is None else on_grid(y, *output_qparams, qmax)


def plain_eager(x: Tensor) -> bool:
    """Eager on a plain tensor, under no dispatch mode and no compiler. There the int8 layers
    call what their traceable forms compute, faster: ATen's fake quantization for
    :func:`on_grid` (one fused kernel instead of five), and the kernel itself for the custom
    op (whose dispatch, a Python custom op, costs more than the kernel at one window).
    Export, compile, fake tensors and FlopCounterMode see the traceable forms."""
    return (
        type(x) is Tensor
        and not torch.compiler.is_compiling()
        and not torch._C._len_torch_dispatch_stack()
    )


def on_grid(x: Tensor, scale: float, zero_point: int, qmax: int) -> Tensor:
    """``torch.fake_quantize_per_tensor_affine(x, scale, zero_point, 0, qmax)`` bit for bit,
    in plain arithmetic that export, compilers and ONNX take (the ATen op has no fake
    kernel): ``x * (1 / scale)`` in float32, rounded half to even, plus the zero point,
    clamped, minus it, times the scale. A NaN lands on the grid's bottom, as in ATen."""
    if plain_eager(x):
        return torch.fake_quantize_per_tensor_affine(x, scale, zero_point, 0, qmax)
    return grid_arithmetic(x, scale, zero_point, qmax)


def grid_arithmetic(x: Tensor, scale: float, zero_point: int, qmax: int) -> Tensor:
    """:func:`on_grid`'s traceable form (tests hold it to ATen's op, ties and NaN included)."""
    inverse = float(np.float32(1.0) / np.float32(scale))  # the float32 reciprocal, as ATen
    scaled = x * inverse
    codes = (torch.round(torch.nan_to_num(scaled, nan=-(2.0**31))) + zero_point).clamp(0, qmax)
    return (codes - zero_point) * scale


class FakeQuantLinear(nn.Module):
    """``fq_out(linear(fq_in(x), fq_w(W)))`` for quantization-aware training."""

    def __init__(self, linear: nn.Linear, activation_max: int = 255) -> None:
        super().__init__()
        self.input_quant = ActivationQuant(activation_max)
        self.linear = linear
        self.weight_quant = WeightQuant()
        self.output_quant = ActivationQuant(activation_max)

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight_quant(self.linear.weight)
        return self.output_quant(F.linear(self.input_quant(x), weight, self.linear.bias))


class QuantizedLinear(nn.Module):
    """An int8 Linear: int8 ``weight`` [out, in] with a float32 ``weight_scale`` per output
    unit (symmetric), a float32 ``bias``, and either frozen uint8 grids for the input and the
    output (static, from QAT) or a 7-bit input grid chosen per call from the input's own
    range and a float output (dynamic, post-training)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        bias: bool,
        static: bool,
        activation_max: int = 255,
    ) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.static = static
        self.activation_max = activation_max if static else DYNAMIC_MAX
        self.register_buffer("weight", torch.zeros(out_features, in_features, dtype=torch.int8))
        self.register_buffer("weight_scale", torch.ones(out_features))
        self.register_buffer("bias", torch.zeros(out_features) if bias else None)
        if static:
            for side in ("input", "output"):
                self.register_buffer(f"{side}_scale", torch.ones(()))
                self.register_buffer(f"{side}_zero_point", torch.zeros((), dtype=torch.int32))
        self.weight: Tensor
        self.weight_scale: Tensor
        self.bias: Tensor | None
        self.input_scale: Tensor
        self.input_zero_point: Tensor
        self.output_scale: Tensor
        self.output_zero_point: Tensor

    @classmethod
    @torch.no_grad()
    def from_fake_quant(cls, layer: FakeQuantLinear) -> QuantizedLinear:
        """The int8 layer on the frozen grids of a trained :class:`FakeQuantLinear`."""
        linear = layer.linear
        out = cls(
            linear.in_features,
            linear.out_features,
            bias=linear.bias is not None,
            static=True,
            activation_max=layer.input_quant.quant_max,
        )
        out.set_weight(*layer.weight_quant.int8(linear.weight), linear.bias)
        for side, quant in (("input", layer.input_quant), ("output", layer.output_quant)):
            scale, zero_point = quant.qparams()
            getattr(out, f"{side}_scale").fill_(scale)
            getattr(out, f"{side}_zero_point").fill_(zero_point)
        return out.to(linear.weight.device)

    @classmethod
    @torch.no_grad()
    def dynamic(cls, linear: nn.Linear) -> QuantizedLinear:
        """Post-training: per-channel int8 weights from their own range, dynamic inputs."""
        out = cls(
            linear.in_features, linear.out_features, bias=linear.bias is not None, static=False
        )
        out.set_weight(*quantize_per_channel(linear.weight, (0,)), linear.bias)
        return out.to(linear.weight.device)

    @torch.no_grad()
    def set_weight(self, int8: Tensor, scale: Tensor, bias: Tensor | None) -> None:
        self.weight.copy_(int8)
        self.weight_scale.copy_(scale.reshape(-1))
        if self.bias is not None and bias is not None:
            self.bias.copy_(bias.detach())

    def input_qparams(self, x: Tensor | None = None) -> tuple[float, int]:
        """(scale, zero point) the input ``x`` is quantized with (static: the frozen grid)."""
        if self.static:
            return float(self.input_scale), int(self.input_zero_point)
        if x is None:
            raise ValueError("a dynamic layer chooses its input grid from the input")
        scale, zero_point = torch._choose_qparams_per_tensor(x, True)  # 7 bits, as torch
        return float(scale), int(zero_point)

    def output_qparams(self) -> tuple[float, int] | None:
        """(scale, zero point) of the output grid; None: the output stays float."""
        if not self.static:
            return None
        return float(self.output_scale), int(self.output_zero_point)

    def forward(self, x: Tensor) -> Tensor:
        return int8_linear_reference(
            x, self.weight, self.weight_scale, self.bias, self.input_qparams(x),
            self.output_qparams(), self.activation_max,
        )  # fmt: skip

    def extra_repr(self) -> str:
        mode = f"static, 0..{self.activation_max}" if self.static else "dynamic"
        return f"in_features={self.in_features}, out_features={self.out_features}, {mode}"
