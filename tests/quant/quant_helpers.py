"""Helpers of the quantization tests: a tiny TFT on synthetic bars and a training loop."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn

from foxhunt import TFTBatch, TFTConfig, quantile_loss
from foxhunt.data import PreparedData
from foxhunt.quant.toolkit import quiet
from foxhunt.training.inference import sequential_batches


def batches(data: PreparedData, size: int = 32) -> Iterator[TFTBatch]:
    """Training windows in order, forever."""
    while True:
        yield from sequential_batches(data.train, size)


def loss_of(model: nn.Module, batch: TFTBatch, cfg: TFTConfig) -> Tensor:
    assert batch.target is not None
    return quantile_loss(model(batch).quantiles, batch.target, cfg.quantiles)


def train_steps(model: nn.Module, data: PreparedData, cfg: TFTConfig, steps: int) -> nn.Module:
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _, batch in zip(range(steps), batches(data), strict=False):
        optimizer.zero_grad()
        loss_of(model, batch, cfg).backward()
        optimizer.step()
    return model.eval()


def predict(model: nn.Module, data: PreparedData) -> Tensor:
    """Forecasts [N, H, Q] of the validation windows."""
    model.eval()
    with torch.no_grad():
        return torch.cat([model(b).quantiles for b in sequential_batches(data.validation, 256)])


def exact_static_linear(wrapper: nn.Module, x: Tensor) -> Tensor:
    """What a converted static Linear (``Quantize -> nnq.Linear -> DeQuantize``) means,
    computed exactly: the input quantized as torch quantizes it, integer dot products in
    int64, weight and input scales, bias, then the output rounded to its frozen grid. The
    reference of the int8 tests: torch.ao's own layers saturate on CPUs without VNNI."""
    quant, linear = wrapper.quant, wrapper.module
    x_scale, x_zp = float(quant.scale), int(quant.zero_point)
    with quiet():
        xq = torch.quantize_per_tensor(x, x_scale, x_zp, torch.quint8).int_repr().long() - x_zp
    w = linear.weight()
    w_scale = w.q_per_channel_scales() if w.qscheme() != torch.per_tensor_affine else w.q_scale()
    acc = xq @ w.int_repr().long().T  # exact
    y = acc.double() * x_scale * torch.as_tensor(w_scale, dtype=torch.float64)
    if linear.bias() is not None:
        y = y + linear.bias().double()
    with quiet():
        out = torch.quantize_per_tensor(y.float(), linear.scale, linear.zero_point, torch.quint8)
    return out.dequantize()


class ExactStaticLinear(nn.Module):
    """``exact_static_linear`` as a module, to stand in a model where a converted Linear is."""

    def __init__(self, wrapper: nn.Module) -> None:
        super().__init__()
        self.wrapper = wrapper

    def forward(self, x: Tensor) -> Tensor:
        return exact_static_linear(self.wrapper, x)
