"""foxhunt's int8 Linear as a custom op (quant/int8_op.py): registration (opcheck), the kernel
against the op's Python math, FLOP counting, and export seeing one op and its decomposition."""

from __future__ import annotations

import io
import platform
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from test_kernel import dynamic_linear, inputs, static_linear
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode

from foxhunt.model.layers import GateAddNorm
from foxhunt.quant import int8_op
from foxhunt.quant.kernel import Int8GateAddNorm, Int8Linear, load


@pytest.fixture(scope="module")
def kernel(require_kernel: Callable[[ModuleType | None, str], ModuleType]) -> ModuleType:
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("foxhunt's int8 kernel is x86-64 only")
    module = require_kernel(load(), "the int8 kernel")
    if module.simd() == "none":
        pytest.skip("this CPU has neither AVX2 nor AVX-512 VNNI: the int8 kernel does nothing")
    return module


def _gate(kernel: ModuleType) -> tuple[Int8GateAddNorm, GateAddNorm]:
    """A converted GateAddNorm (d 64, GLU projection int8) and the kernel's fused form."""
    torch.manual_seed(0)
    gate = GateAddNorm(48, 64, dropout=0.0).eval()
    with torch.no_grad():
        gate.add_norm.norm.weight.uniform_(0.5, 1.5)
        gate.add_norm.norm.bias.uniform_(-0.5, 0.5)
    proj = static_linear(128, 48)
    gate.glu.proj = proj  # type: ignore[assignment]
    fused = Int8GateAddNorm(Int8Linear.from_converted(proj, kernel, glu=True), gate.add_norm.norm)
    return fused, gate


def _args(layer: Int8Linear, x: Tensor, skip: Tensor | None = None) -> tuple[Any, ...]:
    """The op's arguments as ``layer`` calls it."""
    norm = (None, None, 1e-5) if skip is None else layer_norm_args(skip)
    x_scale, x_zp = layer.input_qparams or torch._choose_qparams_per_tensor(x, True)
    return (
        x, *layer._args, x_scale, x_zp, *layer.output_qparams, layer.activation_max, layer.glu,
        skip, *norm, layer.build,
    )  # fmt: skip


def layer_norm_args(skip: Tensor) -> tuple[Tensor, Tensor, float]:
    d = skip.shape[-1]
    gen = torch.Generator().manual_seed(4)
    return torch.rand(d, generator=gen) + 0.5, torch.rand(d, generator=gen) - 0.5, 1e-5


@pytest.mark.parametrize("case", ["static", "dynamic", "glu", "gate"])
def test_opcheck_passes(kernel: ModuleType, case: str) -> None:
    """Schema, fake (shape) implementation and dispatch of ``foxhunt::int8_linear``, with the
    kernel as its implementation and without (the Python math)."""
    x = inputs(5, 3, 48)
    layer = (dynamic_linear if case == "dynamic" else static_linear)(128, 48)
    fused = Int8Linear.from_converted(layer, kernel, glu=case in ("glu", "gate"))
    skip = inputs(5, 3, 64, seed=2) if case == "gate" else None
    args = _args(fused, x, skip)
    for build in (fused.build, ""):
        torch.library.opcheck(torch.ops.foxhunt.int8_linear.default, (*args[:-1], build))


@pytest.mark.parametrize("case", ["static", "dynamic", "glu", "gate"])
def test_the_kernel_computes_the_ops_python_math(kernel: ModuleType, case: str) -> None:
    """The op's implementation by the kernel against its decomposition (the reference
    QuantizedLinear on the unpacked weights): equal up to float rounding, which may move a
    value across an output grid boundary (one quantization step)."""
    x = inputs(40, 48)
    layer = (dynamic_linear if case == "dynamic" else static_linear)(128, 48)
    fused = Int8Linear.from_converted(layer, kernel, glu=case in ("glu", "gate"))
    skip = inputs(40, 64, seed=2) if case == "gate" else None
    args = _args(fused, x, skip)
    ours, math = int8_op.int8_linear(*args), int8_op.decomposed(*args)
    assert ours.shape == math.shape
    step = 0.05 if case in ("static", "glu") else 1e-4
    assert (ours - math).abs().max() <= 1.01 * step + 1e-4
    assert ((ours - math).abs() > 1e-4).float().mean() <= 1e-2
    if case in ("static", "dynamic"):  # the decomposition is QuantizedLinear's own forward
        torch.testing.assert_close(math, layer(x), rtol=0, atol=0)


def test_the_weights_unpack_to_the_int8_matrix() -> None:
    from foxhunt.quant.kernel import glu_order, pack_weight

    int8 = torch.randint(-128, 128, (70, 45), dtype=torch.int8)
    assert torch.equal(int8_op.unpack_weight(pack_weight(int8), 70, 45), int8)
    y = torch.randn(3, 128)
    torch.testing.assert_close(
        int8_op.glu_tiles(y[:, glu_order(128)]), torch.nn.functional.glu(y), rtol=0, atol=0
    )


def test_flop_counter_counts_the_op(kernel: ModuleType) -> None:
    layer = Int8Linear.from_converted(static_linear(128, 48), kernel)
    with FlopCounterMode(display=False) as counter:
        layer(inputs(7, 48))
    counts = counter.get_flop_counts()["Global"]
    assert counts[torch.ops.foxhunt.int8_linear] == 2 * 7 * 48 * 128 == counter.get_total_flops()


def test_export_of_a_converted_model_sees_one_op_and_decomposes_to_aten(
    kernel: ModuleType,
) -> None:
    """torch.export keeps each kernel call one ``foxhunt::int8_linear`` node; the
    decomposition replaces it by ATen ops computing the reference layers, which the ONNX
    exporter takes as they are (no environment switch, no translation) and ONNX Runtime
    computes."""
    import onnxruntime as ort

    fused, gate = _gate(kernel)
    x, skip = inputs(6, 48), inputs(6, 64, seed=2)
    program = torch.export.export(fused, (x, skip))
    targets = [str(node.target) for node in program.graph.nodes if node.op == "call_function"]
    assert targets.count("foxhunt.int8_linear.default") == 1, targets
    decomposed = program.run_decompositions(int8_op.DECOMPOSITIONS)
    assert not any("foxhunt" in str(n.target) for n in decomposed.graph.nodes)
    torch.testing.assert_close(decomposed.module()(x, skip), gate(x, skip), rtol=0, atol=1e-5)
    onnx = torch.onnx.export(decomposed, dynamo=True, verbose=False)
    assert onnx is not None
    buffer = io.BytesIO()
    onnx.save(buffer)  # type: ignore[arg-type]
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), (x, skip), strict=True)}
    got = torch.from_numpy(np.asarray(session.run(None, feeds)[0]))
    torch.testing.assert_close(got, gate(x, skip), rtol=0, atol=1e-5)


def test_the_grid_arithmetic_is_atens_fake_quantization_bit_for_bit() -> None:
    """The reference's rounding in plain arithmetic (what export and ONNX take) against
    ATen's op (what eager runs): ties, both grids, NaN, infinities, values far off the grid."""
    from foxhunt.quant.linear import grid_arithmetic

    for scale, zero_point, top in [(0.03, 128, 255), (0.06, 64, 127), (0.0123456, 0, 255)]:
        x = inputs(4000) * 3
        x[:1000] = (torch.arange(-500, 500) + 0.5) * scale  # on rounding ties
        x[1000:1005] = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e30, -1e30])
        want = torch.fake_quantize_per_tensor_affine(x, scale, zero_point, 0, top)
        got = grid_arithmetic(x, scale, zero_point, top)
        assert torch.equal(got, want), (scale, zero_point)
