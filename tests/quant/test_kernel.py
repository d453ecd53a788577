"""foxhunt's int8 kernel (quant/int8_linear.cpp) against what the layers it replaces mean.

References: an exact integer computation for static layers (torch.ao's own static int8 Linear
saturates on CPUs without VNNI, see quant/guard.py), torch.ao's dynamic layers (7-bit
activations: exact everywhere), and the fake-quant model QAT trained for whole TFTs."""

from __future__ import annotations

import copy
import dataclasses
import platform
from collections.abc import Callable
from types import ModuleType

import pytest
import torch
import torch.ao.nn.quantized as nnq
import torch.ao.nn.quantized.dynamic as nnqd
import torch.ao.quantization as tq
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
from foxhunt.quant.toolkit import engine, quiet

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


def qweight(n: int, k: int, seed: int) -> tuple[Tensor, Tensor]:
    """A per-channel symmetric qint8 weight [n, k] and a float bias [n]."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=gen) * 0.1
    scales = (w.abs().amax(dim=1) / 127).double()
    q = torch.quantize_per_channel(w, scales, torch.zeros(n, dtype=torch.long), 0, torch.qint8)
    return q, torch.randn(n, generator=gen)


def static_linear(n: int, k: int, seed: int = 0) -> tq.QuantWrapper:
    """What ``convert`` makes of a QAT Linear: Quantize -> nnq.Linear -> DeQuantize."""
    with quiet(), engine("onednn"):
        q, bias = qweight(n, k, seed)
        linear = nnq.Linear(k, n)
        linear.set_weight_bias(q, bias)
        linear.scale, linear.zero_point = OUT_SCALE, OUT_ZP
        wrapper = tq.QuantWrapper(nn.Linear(k, n))
        wrapper.quant = nnq.Quantize(0.03, 128, torch.quint8)  # type: ignore[assignment]
        wrapper.module = linear
        wrapper.dequant = nnq.DeQuantize()  # type: ignore[assignment]
        return wrapper.eval()


def dynamic_linear(n: int, k: int, seed: int = 0) -> nnqd.Linear:
    with quiet(), engine("onednn"):
        q, bias = qweight(n, k, seed)
        linear = nnqd.Linear(k, n)
        linear.set_weight_bias(q, bias)
        return linear


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


@pytest.mark.parametrize(("rows", "k", "n"), SHAPES)
def test_static_linear_is_exact(kernel: ModuleType, rows: int, k: int, n: int) -> None:
    wrapper = static_linear(n, k)
    x = inputs(2, rows, k)
    layer = Int8Linear.from_converted(wrapper, kernel)
    on_ties = torch.randint(-60, 60, x.shape, generator=torch.Generator().manual_seed(2)) + 0.5
    with torch.no_grad():
        assert_matches(layer(x), exact_static_linear(wrapper, x), OUT_SCALE)
        ties = on_ties * 0.03  # x / scale = n + 1/2
        assert_matches(layer(ties), exact_static_linear(wrapper, ties), OUT_SCALE)


def test_input_quantization_is_torchs_ties_included(kernel: ModuleType) -> None:
    """Identity weights and no output quantization: the output is the quantized input."""
    k, x_scale, x_zp = 64, 0.03, 128
    w_scale = torch.full((k,), 1 / 127, dtype=torch.double)
    eye = torch.quantize_per_channel(
        torch.eye(k), w_scale, torch.zeros(k, dtype=torch.long), 0, torch.qint8
    )
    layer = Int8Linear(eye, None, input_qparams=(x_scale, x_zp), output_qparams=None, kernel=kernel)
    gen = torch.Generator().manual_seed(3)
    x = torch.cat(
        [(torch.randint(-100, 100, (500, k), generator=gen) + 0.5) * x_scale, inputs(500, k)]
    )
    with quiet():
        q = torch.quantize_per_tensor(x, x_scale, x_zp, torch.quint8).int_repr().int()
    mult = torch.tensor(x_scale, dtype=torch.float32) * w_scale.float()[0]
    assert torch.equal(layer(x), ((q - x_zp) * 127).float() * mult)


@pytest.mark.parametrize(("rows", "k", "n"), SHAPES)
def test_dynamic_linear_matches_torch_ao(kernel: ModuleType, rows: int, k: int, n: int) -> None:
    linear = dynamic_linear(n, k)
    x = inputs(2, rows, k)
    with torch.no_grad():
        reference = linear(x)
        step = float(reference.abs().max()) / 100
        assert_matches(Int8Linear.from_converted(linear, kernel)(x), reference, step)


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
    assert not any(isinstance(m, tq.QuantWrapper) for m in modules)  # every int8 Linear
    expected, got = predict(qat_tft, data), predict(fast, data)
    assert (got - expected).abs().max() <= 0.01 * expected.std()
    assert (got - expected).abs().mean() <= 1e-4 * expected.std()
    if kernel is available():  # copies load available() again: this build
        assert torch.equal(predict(copy.deepcopy(fast), data), got)


def test_accelerated_dynamic_tft_predicts_what_torch_ao_computes(  # 7-bit: exact everywhere
    kernel: ModuleType, float_model: TemporalFusionTransformer, data: PreparedData
) -> None:
    reference = quantize_dynamic(copy.deepcopy(float_model))
    fast = copy.deepcopy(reference)
    assert accelerate(fast, kernel) > 0
    assert not any(isinstance(m, nnqd.Linear) for m in fast.modules())
    expected, got = predict(reference, data), predict(fast, data)
    assert (got - expected).abs().max() <= 0.01 * expected.std()


def test_kernel_switched_off_keeps_torch_ao_layers(
    monkeypatch: pytest.MonkeyPatch, qat_tft: nn.Module
) -> None:
    monkeypatch.setenv("FOXHUNT_FUSED_KERNEL", "0")
    model = convert(copy.deepcopy(qat_tft))
    assert accelerate(model) == 0
    assert any(isinstance(m, tq.QuantWrapper) for m in model.modules())


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
