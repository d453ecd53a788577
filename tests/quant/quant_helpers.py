"""Helpers of the quantization tests: a tiny TFT on synthetic bars and a training loop."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor, nn

from foxhunt import TFTBatch, TFTConfig, quantile_loss
from foxhunt.data import PreparedData
from foxhunt.quant.linear import QuantizedLinear
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


def exact_static_linear(layer: QuantizedLinear, x: Tensor) -> Tensor:
    """What a converted int8 Linear means, computed exactly: the input rounded to its grid
    as ATen's fake quantization rounds it, integer dot products in int64, weight and input
    scales and the bias in float64, then the output rounded to its frozen grid (static)."""
    x_scale, x_zp = layer.input_qparams(x)
    top = layer.activation_max
    fake = torch.fake_quantize_per_tensor_affine(x, x_scale, x_zp, 0, top)
    xq = torch.round(fake / x_scale).long()  # q - zero point, exact integers
    acc = xq @ layer.weight.long().T  # exact
    y = acc.double() * x_scale * layer.weight_scale.double()
    if layer.bias is not None:
        y = y + layer.bias.double()
    out = layer.output_qparams()
    if out is None:
        return y.float()
    return torch.fake_quantize_per_tensor_affine(y.float(), *out, 0, top)


class ExactStaticLinear(nn.Module):
    """``exact_static_linear`` as a module, to stand in a model where a converted Linear is."""

    def __init__(self, layer: QuantizedLinear) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: Tensor) -> Tensor:
        return exact_static_linear(self.layer, x)
