"""foxhunt's int8 kernel (quant/int8_linear.cpp) against what the layers it replaces mean.

References: an exact integer computation of the converted layers (``QuantizedLinear``), their
own float32 forward, and the fake-quant model QAT trained for whole TFTs."""

from __future__ import annotations

import copy
import dataclasses
import platform
from collections.abc import Callable
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F
from quant_helpers import ExactStaticLinear, exact_static_linear, predict, train_steps
from torch import Tensor, nn

from foxhunt import TemporalFusionTransformer
from foxhunt.data import PreparedData
from foxhunt.errors import FoxhuntError
from foxhunt.model.layers import GateAddNorm
from foxhunt.quant import QATConfig, convert, prepare_qat, quantize_dynamic
from foxhunt.quant.kernel import (
    Int8GateAddNorm,
    Int8Linear,
    accelerate,
    available,
    glu_order,
    load,
)
from foxhunt.quant.linear import QuantizedLinear

OUT_SCALE, OUT_ZP = 0.05, 120


@pytest.fixture(scope="module", params=["native", "avx2"])
def kernel(
    request: pytest.FixtureRequest, require_kernel: Callable[[ModuleType | None, str], ModuleType]
) -> ModuleType:
    """The kernel as this CPU builds it, and its AVX2 path (-march=x86-64-v3)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("foxhunt's int8 kernel is x86-64 only")
    module = require_kernel(load(request.param), f"the int8 kernel ({request.param})")
    if module.simd() == "none":
        pytest.skip("this CPU has neither AVX2 nor AVX-512 VNNI: the int8 kernel does nothing")
    if request.param == "avx2":
        assert module.simd() == "avx2"
    return module


def qweight(n: int, k: int, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per-channel symmetric int8 weight [n, k], its scales [n] and a float bias [n]."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=gen) * 0.1
    scale = w.abs().amax(dim=1) / 127
    int8 = torch.round(w / scale[:, None]).clamp(-128, 127).to(torch.int8)
    return int8, scale, torch.randn(n, generator=gen)


def static_linear(n: int, k: int, seed: int = 0, top: int = 255) -> QuantizedLinear:
    """What ``convert`` makes of a QAT Linear: frozen input and output grids."""
    layer = QuantizedLinear(k, n, bias=True, static=True, activation_max=top)
    layer.set_weight(*qweight(n, k, seed))
    layer.input_scale.fill_(0.03 if top == 255 else 0.06)
    layer.input_zero_point.fill_(128 if top == 255 else 64)
    layer.output_scale.fill_(OUT_SCALE)
    layer.output_zero_point.fill_(OUT_ZP)
    return layer.eval()


def dynamic_linear(n: int, k: int, seed: int = 0) -> QuantizedLinear:
    layer = QuantizedLinear(k, n, bias=True, static=False)
    layer.set_weight(*qweight(n, k, seed))
    return layer.eval()


def inputs(*shape: int, seed: int = 1) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * 2


def assert_matches(ours: Tensor, reference: Tensor, step: float) -> None:
    """Equal up to float rounding, but where that rounding moves a value across a
    quantization boundary (the kernel and oneDNN order the requantization's float products
    differently; 1e-6 to 2e-5 of the outputs here): then off by one quantization step."""
    assert ours.shape == reference.shape
    off = (ours - reference).abs() > 1e-5
    assert off.float().mean() <= 1e-3
    assert (ours - reference).abs().max() <= 1.01 * step


SHAPES = [(1, 5, 3), (7, 64, 128), (100, 17, 64), (73, 130, 200)]


@pytest.mark.parametrize("top", [255, 127])
@pytest.mark.parametrize(("rows", "k", "n"), SHAPES)
def test_static_linear_is_exact(kernel: ModuleType, rows: int, k: int, n: int, top: int) -> None:
    """8-bit and 7-bit grids, inputs and outputs beyond them, inputs on rounding ties."""
    reference = static_linear(n, k, top=top)
    x = inputs(2, rows, k)
    layer = Int8Linear.from_converted(reference, kernel)
    on_ties = torch.randint(-60, 60, x.shape, generator=torch.Generator().manual_seed(2)) + 0.5
    with torch.no_grad():
        assert_matches(layer(x), exact_static_linear(reference, x), OUT_SCALE)
        assert_matches(layer(x), reference(x), OUT_SCALE)  # the float32 reference
        ties = on_ties * float(reference.input_scale)  # x / scale = n + 1/2
        assert_matches(layer(ties), exact_static_linear(reference, ties), OUT_SCALE)


@pytest.mark.parametrize("top", [255, 127])
def test_input_quantization_is_atens_ties_included(kernel: ModuleType, top: int) -> None:
    """Identity weights and no output quantization: the output is the quantized input, as
    ATen's fake quantization rounds it (half to even before the zero point is added)."""
    k, x_scale, x_zp = 64, 0.03, 100
    eye = (torch.eye(k) * 127).to(torch.int8)
    w_scale = torch.full((k,), 1 / 127)
    layer = Int8Linear(
        eye, w_scale, None, input_qparams=(x_scale, x_zp), output_qparams=None, kernel=kernel,
        activation_max=top,
    )  # fmt: skip
    gen = torch.Generator().manual_seed(3)
    x = torch.cat(
        [(torch.randint(-150, 200, (500, k), generator=gen) + 0.5) * x_scale, inputs(500, k)]
    )
    fake = torch.fake_quantize_per_tensor_affine(x, x_scale, x_zp, 0, top)
    q = torch.round(fake / x_scale).int()  # q - zero point
    mult = torch.tensor(x_scale, dtype=torch.float32) * w_scale[0]
    assert torch.equal(layer(x), (q * 127).float() * mult)


@pytest.mark.parametrize(("rows", "k", "n"), SHAPES)
def test_dynamic_linear_matches_its_reference(
    kernel: ModuleType, rows: int, k: int, n: int
) -> None:
    linear = dynamic_linear(n, k)
    x = inputs(2, rows, k)
    with torch.no_grad():
        reference = linear(x)
        step = float(reference.abs().max()) / 100
        assert_matches(Int8Linear.from_converted(linear, kernel)(x), reference, step)
        assert torch.allclose(exact_static_linear(linear, x), reference, atol=1e-4)


def test_glu_order_pairs_each_value_with_its_gate() -> None:
    order = glu_order(128)
    assert sorted(order.tolist()) == list(range(128))
    tiles = order.view(2, 64)
    assert (tiles[:, 32:] == tiles[:, :32] + 64).all()  # 32 values, then their 32 gates


@pytest.mark.parametrize("make", [static_linear, dynamic_linear])
def test_fused_glu_matches_f_glu(kernel: ModuleType, make: object) -> None:
    layer = make(192, 40)  # type: ignore[operator]
    x = inputs(3, 50, 40)
    exact = ExactStaticLinear(layer) if make is static_linear else layer
    with torch.no_grad():
        reference = F.glu(exact(x), dim=-1)
        fused = Int8Linear.from_converted(layer, kernel, glu=True)(x)
    assert fused.shape == (3, 50, 96)
    assert torch.allclose(fused, reference, atol=1e-5)
    with pytest.raises(ValueError, match="multiple of 64"):
        Int8Linear.from_converted(static_linear(96, 8), kernel, glu=True)


def test_accelerate_fuses_a_whole_gate_add_norm(kernel: ModuleType) -> None:
    gate = GateAddNorm(48, 64, dropout=0.1).eval()
    gate.add_norm.norm.weight.data.uniform_(0.5, 1.5)
    gate.add_norm.norm.bias.data.uniform_(-1.0, 1.0)
    gate.glu.proj = ExactStaticLinear(static_linear(128, 48))  # type: ignore[assignment]
    x, skip = inputs(4, 20, 48), inputs(4, 20, 64, seed=2)
    with torch.no_grad():
        reference = gate(x, skip), gate(x, skip[:, :1])  # a broadcast skip too
    gate.glu.proj = static_linear(128, 48)  # type: ignore[assignment]
    holder = nn.ModuleDict({"gate": gate})
    with torch.no_grad():
        assert accelerate(holder, kernel) == 1
        fused = holder["gate"]
        assert isinstance(fused, Int8GateAddNorm)
        ours = fused(x, skip), fused(x, skip[:, :1])
    for a, b in zip(ours, reference, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


@pytest.fixture(scope="module")
def qat_tft(data: PreparedData, float_model: TemporalFusionTransformer) -> nn.Module:
    """A QAT TFT with hidden size 32: big enough for the fused gates (GLU of 2 x 32)."""
    config = dataclasses.replace(float_model.config, hidden_size=32)
    torch.manual_seed(0)
    model = prepare_qat(TemporalFusionTransformer(config), QATConfig(freeze_after=5))
    return train_steps(model, data, config, 10)


def test_accelerated_tft_predicts_what_qat_simulated(
    kernel: ModuleType, qat_tft: nn.Module, data: PreparedData
) -> None:
    """The specification of an int8 TFT is its fake-quant model: within 1% of the prediction
    spread at most and 0.01% on average (requantization rounding moves a few outputs a step)."""
    fast = convert(copy.deepcopy(qat_tft))
    replaced = accelerate(fast, kernel)
    modules = list(fast.modules())
    assert replaced >= 10
    assert any(isinstance(m, Int8GateAddNorm) for m in modules)
    assert not any(isinstance(m, QuantizedLinear) for m in modules)  # every int8 Linear
    expected, got = predict(qat_tft, data), predict(fast, data)
    assert (got - expected).abs().max() <= 0.01 * expected.std()
    assert (got - expected).abs().mean() <= 1e-4 * expected.std()
    if kernel is available():  # copies load available() again: this build
        assert torch.equal(predict(copy.deepcopy(fast), data), got)


def test_accelerated_dynamic_tft_predicts_what_its_reference_computes(
    kernel: ModuleType, float_model: TemporalFusionTransformer, data: PreparedData
) -> None:
    reference = quantize_dynamic(copy.deepcopy(float_model))
    fast = copy.deepcopy(reference)
    assert accelerate(fast, kernel) > 0
    assert not any(isinstance(m, QuantizedLinear) for m in fast.modules())
    expected, got = predict(reference, data), predict(fast, data)
    assert (got - expected).abs().max() <= 0.01 * expected.std()


def test_kernel_switched_off_keeps_the_reference_layers(
    monkeypatch: pytest.MonkeyPatch, qat_tft: nn.Module
) -> None:
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "0")
    model = convert(copy.deepcopy(qat_tft))
    assert accelerate(model) == 0
    assert any(isinstance(m, QuantizedLinear) for m in model.modules())


def test_threads_split_rows_without_changing_the_result(kernel: ModuleType) -> None:
    layer = Int8Linear.from_converted(static_linear(128, 64), kernel)
    x = inputs(1000, 64)  # 21 blocks of 48 rows
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = layer(x)
        torch.set_num_threads(3)
        assert torch.equal(layer(x), one)
    finally:
        torch.set_num_threads(threads)


def test_kernel_refuses_inputs_it_was_not_packed_for(kernel: ModuleType) -> None:
    layer = Int8Linear.from_converted(static_linear(16, 8), kernel)
    assert layer(torch.randn(2, 0, 8)).shape == (2, 0, 16)  # no rows: an empty output
    with pytest.raises(RuntimeError, match="do not match"):
        layer(torch.randn(3, 12))
    with pytest.raises(RuntimeError, match="x must be a contiguous CPU tensor of Float"):
        kernel.linear(torch.randn(3, 8, dtype=torch.float64), *layer._args, 0.1, 0, 0.0, 0)


def test_simd_can_be_chosen_and_is_checked(
    monkeypatch: pytest.MonkeyPatch, require_kernel: Callable[[ModuleType | None, str], ModuleType]
) -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("foxhunt's int8 kernel is x86-64 only")
    require_kernel(load("avx2"), "the int8 kernel (avx2)")
    monkeypatch.delenv("FOXHUNT_INT8_SIMD", raising=False)
    monkeypatch.setenv("FOXHUNT_CPU_ISA", "avx2")
    found = available()
    assert found is not None and found.simd() == "avx2"
    monkeypatch.setenv("FOXHUNT_CPU_ISA", "sse9")
    with pytest.raises(FoxhuntError, match="FOXHUNT_CPU_ISA='sse9'"):
        available()


@pytest.mark.parametrize("glu", [False, True])
def test_avx2_and_avx512_paths_compute_the_same_outputs(
    glu: bool, require_kernel: Callable[[ModuleType | None, str], ModuleType]
) -> None:
    native = require_kernel(load("native"), "the int8 kernel (native)")
    avx2 = require_kernel(load("avx2"), "the int8 kernel (avx2)")
    if native.simd() != "avx512-vnni":
        pytest.skip("needs a CPU with AVX-512 VNNI to build both paths")
    layer, x = static_linear(192, 40), inputs(3, 50, 40)
    with torch.no_grad():
        a = Int8Linear.from_converted(layer, native, glu=glu)(x)
        b = Int8Linear.from_converted(layer, avx2, glu=glu)(x)
    assert torch.equal(a, b)
