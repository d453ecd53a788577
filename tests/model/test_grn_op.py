"""The per-variable GRNs as custom ops: registration (opcheck), the C++ kernel against the
Python math, FLOP counting, export and compile, and one change of the math seen everywhere."""

from __future__ import annotations

import io
from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest
import torch
from torch import Tensor
from torch.utils.flop_counter import FlopCounterMode

from foxhunt import TemporalFusionTransformer, TFTConfig
from foxhunt.exports import onnx_trace
from foxhunt.exports.onnx_spec import used_inputs
from foxhunt.exports.onnx_trace import trace
from foxhunt.model import fused_grns, grn_cells
from foxhunt.model.dropout import KEEP_ALL, FastDropout
from foxhunt.model.variable_grns import VariableGRNs, _carry_one, _with_bias
from foxhunt.model.variable_selection import VariableSelectionNetwork
from helpers import tiny_run

RequireKernel = Callable[[ModuleType | None, str], ModuleType]
N, ROWS, K, G, D = 4, 6, 3, 3, 5


def _inputs(dtype: torch.dtype, *, grad: bool = True, seed: int = 0) -> list[Tensor]:
    """z, weights and the five augmented parameters of the op, as VariableGRNs makes them
    (the kernel's matmuls carry z's last feature, a 1, through the weights' carry columns)."""
    torch.manual_seed(seed)
    grns = VariableGRNs(N, K - 1, G, D, dropout=0.0).to(dtype)
    with torch.no_grad():
        for p in (grns.norm_weight, grns.norm_bias):
            p.uniform_(0.5, 1.5)  # not the init's ones and zeros
        fc2 = _with_bias(grns.fc2_weight, grns.fc2_bias)
        params = [
            grns.input_weight(),
            torch.cat([fc2, _carry_one(fc2, 1)], dim=-1),
            _with_bias(grns.glu_weight, grns.glu_bias),
            grns.norm_weight,
            grns.norm_bias,
        ]
    z = torch.cat([torch.randn(N, ROWS, K - 1), torch.ones(N, ROWS, 1)], -1)
    weights = torch.softmax(torch.randn(ROWS, N), -1)
    return [t.detach().to(dtype).requires_grad_(grad) for t in (z, weights, *params)]


def _dropout(kind: str) -> tuple[Tensor | None, int, Tensor | None]:
    """The op's (seed, threshold, mask) arguments: no dropout, hashed, or drawn."""
    drop = FastDropout(0.3)
    if kind == "hashed":
        return torch.tensor(-123456789012345), drop.keep_threshold, None
    if kind == "drawn":
        torch.manual_seed(0)
        return None, drop.keep_threshold, drop.keep_mask((N, ROWS, G), torch.device("cpu"))
    return None, KEEP_ALL, None


@pytest.mark.parametrize("dropout", ["none", "hashed", "drawn"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_opcheck_passes_for_both_ops(dtype: torch.dtype, dropout: str) -> None:
    """float32: the C++ kernel (where it builds; not with a drawn mask); float64: the blocked
    Python math."""
    args = (*_inputs(dtype), *_dropout(dropout))
    torch.library.opcheck(torch.ops.foxhunt.grn_cells.default, args)
    if grn_cells.kernel_for(args[-1], *args[:7]) is None:
        return  # the backward op is the kernel's; elsewhere backward is the math's vjp
    grad = torch.randn(ROWS, D, dtype=dtype)
    for need_z in (True, False):
        back = (grad, *(t.detach() for t in args[:7]), *args[7:], need_z)
        torch.library.opcheck(torch.ops.foxhunt.grn_cells_backward.default, back)


def _against_math(dropout: str) -> list[tuple[str, Tensor, Tensor]]:
    """(name, op, :func:`fused_grns.weighted_grns`) for the output and every gradient, in
    float32: the C++ kernel where it builds."""
    seed, threshold, mask = _dropout(dropout)
    probe = torch.linspace(-1, 1, ROWS * D).view(ROWS, D)
    results = []
    for run in ("op", "math"):
        inputs = _inputs(torch.float32)
        if run == "op":
            out = fused_grns.grn_cells_op(*inputs, seed, threshold, mask)
        else:
            keep = fused_grns.keep_mask(seed, threshold, mask, (N, ROWS, G))(
                slice(None), slice(None)
            )
            z, weights, *params = inputs
            out = fused_grns.weighted_grns(z, weights, keep, *params)
        (out * probe).sum().backward()
        results.append([out.detach(), *(t.grad for t in inputs)])
    names = ["out", "z", "weights", "in_w", "fc2", "glu", "norm_w", "norm_b"]
    return list(zip(names, *results, strict=True))  # type: ignore[arg-type]


def _assert_kernel_follows_the_math(dropout: str) -> None:
    for name, op, math in _against_math(dropout):
        torch.testing.assert_close(op, math, atol=2e-5, rtol=1e-4, msg=f"{name} ({dropout})")


@pytest.mark.parametrize("dropout", ["none", "hashed"])
def test_the_kernel_computes_the_python_math(require_kernel: RequireKernel, dropout: str) -> None:
    require_kernel(grn_cells.load(), "the grn_cells kernel")
    _assert_kernel_follows_the_math(dropout)


def _vsn(dtype: torch.dtype = torch.float64) -> tuple[VariableSelectionNetwork, tuple[Tensor, ...]]:
    torch.manual_seed(0)
    vsn = VariableSelectionNetwork(
        5, (3,), variable_size=4, hidden_size=8, dropout=0.1, context_size=8
    ).to(dtype)
    inputs = (
        torch.randn(2, 3, 5, dtype=dtype),
        torch.randint(0, 3, (2, 3, 1)),
        torch.randn(2, 8, dtype=dtype),
    )
    return vsn.eval(), inputs


def _no_op_left(program: torch.export.ExportedProgram) -> bool:
    """No foxhunt op in the program's graphs (autocast regions are subgraphs)."""
    graphs = [
        m.graph for m in program.graph_module.modules() if isinstance(m, torch.fx.GraphModule)
    ]
    return not any("foxhunt" in str(node.target) for graph in graphs for node in graph.nodes)


def test_export_decomposes_the_op_to_the_python_math() -> None:
    vsn, inputs = _vsn()
    program = torch.export.export(vsn, inputs)
    assert not _no_op_left(program)  # the op itself is in the exported graph ...
    decomposed = program.run_decompositions(fused_grns.DECOMPOSITIONS)
    assert _no_op_left(decomposed)  # ... and its decomposition replaces it
    torch.testing.assert_close(decomposed.module()(*inputs), vsn(*inputs))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compile_of_inference_and_a_training_step_has_no_graph_break(dtype: torch.dtype) -> None:
    """fullgraph=True fails on any graph break; aot_eager traces forward and backward through
    the ops' fake and autograd registrations as inductor does, without its code generation."""
    vsn, (real, codes, context) = _vsn(dtype)
    torch._dynamo.reset()
    compiled = torch.compile(vsn, backend="aot_eager", fullgraph=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(real, codes, context)[0], vsn(real, codes, context)[0])
    vsn.train()
    grads = []
    for model in (compiled, vsn):
        vsn.zero_grad()
        torch.manual_seed(3)  # the same dropout seed
        model(real, codes, context)[0].square().sum().backward()
        grads.append([p.grad.clone() for p in vsn.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b)


def _bmm_flops(fn: Callable[[], Tensor]) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_flop_counter_counts_the_op_as_its_math(dtype: torch.dtype) -> None:
    """The registered formula gives the op (the C++ kernel in float32) the matmul FLOPs that
    the counter finds in the Python math."""
    z, weights, *params = (t.detach() for t in _inputs(dtype))
    with FlopCounterMode(display=False) as counter:
        out = fused_grns.grn_cells_op(z, weights, *params, None, KEEP_ALL, None)
    counts = counter.get_flop_counts()["Global"]
    assert counts[torch.ops.foxhunt.grn_cells] > 0
    assert counter.get_total_flops() == counts[torch.ops.foxhunt.grn_cells]
    assert counter.get_total_flops() == _bmm_flops(
        lambda: fused_grns.weighted_grns(z, weights, None, *params)
    )
    del out
    inputs = _inputs(dtype)
    with FlopCounterMode(display=False) as counter:
        fused_grns.grn_cells_op(*inputs, None, KEEP_ALL, None).sum().backward()
    counts = counter.get_flop_counts()["Global"]
    if grn_cells.kernel_for(None, *inputs) is not None:  # the kernel's backward: an op
        assert counts[torch.ops.foxhunt.grn_cells_backward] > 0
    else:  # the math's vjp: ATen ops
        assert counts[torch.ops.aten.bmm] > 0


def _planted(*args: Tensor | None) -> Tensor:
    return PLANTED_FROM(*args) + 1.0


PLANTED_FROM = fused_grns.weighted_grns


def _onnx_output(program: torch.export.ExportedProgram, inputs: tuple[Tensor, ...]) -> Tensor:
    import onnxruntime as ort

    onnx_program = torch.onnx.export(
        program.run_decompositions(fused_grns.DECOMPOSITIONS), dynamo=True, verbose=False
    )
    assert onnx_program is not None
    buffer = io.BytesIO()
    onnx_program.save(buffer)  # type: ignore[arg-type]
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs, strict=True)}
    return torch.from_numpy(np.asarray(session.run(None, feeds)[0]))


def _every_path(vsn: VariableSelectionNetwork, inputs: tuple[Tensor, ...]) -> dict[str, Tensor]:
    """The VSN's output by eager (the blocked math in float64), export, compile and ONNX."""
    torch._dynamo.reset()
    with torch.no_grad():
        program = torch.export.export(vsn, inputs)
        return {
            "eager": vsn(*inputs)[0],
            "export": program.run_decompositions(fused_grns.DECOMPOSITIONS).module()(*inputs)[0],
            "compile": torch.compile(vsn, backend="aot_eager", fullgraph=True)(*inputs)[0],
            "onnx": _onnx_output(torch.export.export(vsn.float(), _float(inputs)), _float(inputs)),
        }


def _tft_forecasts(model_config: TFTConfig) -> tuple[Callable[[], np.ndarray], np.ndarray]:
    """A small TFT's forecasts from its ONNX trace (``onnx_trace.trace``, what ``foxhunt
    export --onnx`` writes) under ONNX Runtime, a function traced when called; and the eager
    model's on the same inputs, now (they agree to about 2e-7: float32 rounding)."""
    import onnxruntime as ort

    config = tiny_run(model=model_config)
    torch.manual_seed(0)
    model = TemporalFusionTransformer(config.model).eval()
    names = used_inputs(config)
    inputs = onnx_trace._example(config, names, 2)
    with torch.no_grad():
        eager = onnx_trace._Graph(model, names, config)(*inputs).numpy()

    def exported() -> np.ndarray:
        session = ort.InferenceSession(trace(model, config), providers=["CPUExecutionProvider"])
        feeds = {n: t.numpy() for n, t in zip(names, inputs, strict=True)}
        return np.asarray(session.run(None, feeds)[0])

    return exported, eager


def _float(inputs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    return tuple(t.float() if t.is_floating_point() else t for t in inputs)


def test_a_change_of_the_python_math_reaches_every_path_or_the_kernel_test_fails(
    monkeypatch: pytest.MonkeyPatch, require_kernel: RequireKernel, cfg: TFTConfig
) -> None:
    """Plant "+1" in :func:`fused_grns.weighted_grns`: eager, export, compile and ONNX all
    move; the C++ kernel cannot, and its test against the math fails."""
    require_kernel(grn_cells.load(), "the grn_cells kernel")
    vsn, inputs = _vsn()
    with torch.no_grad():
        before = vsn(*inputs)[0]  # unplanted, eager in float64: what every path computes
    monkeypatch.setattr(fused_grns, "weighted_grns", _planted)
    after = _every_path(vsn.double(), inputs)
    # "+1" in each of the two GRN groups moves the output by 2; a path that missed the plant
    # computes `before` (ONNX in float32: within about 1e-6). Each path is compared with the
    # unplanted eager output, not traced twice: each trace costs most of this test.
    for path, out in after.items():
        assert (out.double() - before).abs().max() > 0.5, path
    monkeypatch.undo()
    exported, eager_before = _tft_forecasts(cfg)
    monkeypatch.setattr(fused_grns, "weighted_grns", _planted)
    # the export door's own trace: unplanted it gives the eager forecasts within 2.4e-7, the
    # plant moves them by up to 0.08 (measured, on this config)
    assert np.abs(exported() - eager_before).max() > 1e-3
    with pytest.raises(AssertionError, match="out"):
        _assert_kernel_follows_the_math("none")
