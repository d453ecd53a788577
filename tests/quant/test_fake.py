"""foxhunt's fake quantizers compute what torch.ao's default QAT qconfig computed, bit for bit.

torch.ao's eager quantization is deprecated but still in torch 2.13; where it is, it is the
reference (gradients included). Where a later torch drops it, these tests skip, saying so."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import Tensor, nn

from foxhunt.quant.fake import ActivationQuant, WeightQuant
from foxhunt.quant.linear import FakeQuantLinear, QuantizedLinear

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    tq = pytest.importorskip("torch.ao.quantization", reason="torch.ao is gone from this torch")


def ao_activation(quant_max: int) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tq.FakeQuantize(
            observer=tq.MovingAverageMinMaxObserver, quant_min=0, quant_max=quant_max
        )


def ao_weight() -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tq.default_per_channel_weight_fake_quant()


def sequence(seed: int, shape: tuple[int, ...], steps: int = 6) -> list[Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=gen) * (1 + i) + i * 0.3 for i in range(steps)]


def run(quant: nn.Module, xs: list[Tensor], observe: list[bool]) -> list[Tensor]:
    out = []
    for x, on in zip(xs, observe, strict=True):
        if hasattr(quant, "observing"):
            quant.observing = on
        else:
            (quant.enable_observer if on else quant.disable_observer)()
        x = x.clone().requires_grad_(True)
        y = quant(x)
        (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
        assert x.grad is not None
        out += [y.detach(), x.grad]
    return out


OBSERVE = [True, True, False, True, False, False]


@pytest.mark.parametrize("quant_max", [255, 127])
def test_activation_quant_is_torch_aos_moving_average_fake_quantize(quant_max: int) -> None:
    xs = sequence(0, (8, 5, 16))
    ours, theirs = ActivationQuant(quant_max), ao_activation(quant_max)
    for a, b in zip(run(ours, xs, OBSERVE), run(theirs, xs, OBSERVE), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(ours.scale, theirs.scale)
    assert torch.equal(ours.zero_point, theirs.zero_point)


def test_weight_quant_is_torch_aos_per_channel_symmetric_fake_quantize() -> None:
    xs = sequence(1, (12, 7))
    xs[2][3] = xs[2][3].abs()  # a channel of one sign: zero point 0 all the same
    ours, theirs = WeightQuant(), ao_weight()
    for a, b in zip(run(ours, xs, OBSERVE), run(theirs, xs, OBSERVE), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(ours.scale, theirs.scale)
    int8, scale = ours.int8(xs[-1])
    assert int8.dtype == torch.int8 and torch.equal(int8 * scale[:, None], ours(xs[-1]))


def test_a_converted_layer_computes_its_fake_quant_layer_bit_for_bit() -> None:
    torch.manual_seed(0)
    layer = FakeQuantLinear(nn.Linear(20, 12), activation_max=255)
    for x in sequence(2, (30, 20), steps=4):  # observe a few batches, then freeze
        layer.input_quant.observing = layer.output_quant.observing = True
        layer.weight_quant.observing = True
        layer(x)
    layer.input_quant.observing = layer.output_quant.observing = False
    layer.weight_quant.observing = False
    x = torch.randn(50, 20) * 3
    with torch.no_grad():
        assert torch.equal(QuantizedLinear.from_fake_quant(layer)(x), layer(x))


def test_a_grid_loads_into_a_quantizer_that_never_observed() -> None:
    trained = WeightQuant()
    trained.observe(torch.randn(9, 4))
    fresh = WeightQuant()
    fresh.load_state_dict(trained.state_dict())
    assert fresh.observed and torch.equal(fresh.scale, trained.scale)
    assert fresh.min_val.data_ptr() != fresh.max_val.data_ptr()
