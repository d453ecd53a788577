"""The int8 section of benchmarks/kernel_routes.py: one Linear at the model's int8 layer
shapes, ``foxhunt::int8_linear`` (quant/kernel.py, int8_linear.cpp) against the maintained
int8 routes, FP32 ``F.linear`` beside them.

Routes, each from the same float Linear (weights ~N(0, 0.1), inputs ~N(0, 1)):

- ``fp32``: ``F.linear`` in float32 (the error column's reference);
- ``fox-static``: foxhunt's kernel as ``export --int8`` serves a QAT run: static uint8 input
  and output grids (foxhunt's fake quantizers, observed once on the calibration rows),
  per-channel int8 weights;
- ``fox-dynamic``: foxhunt's kernel as ``export --int8`` serves an FP32 run: a 7-bit input
  grid chosen per call, float output;
- ``torchao-da8w8``: torchao's ``Int8DynamicActivationInt8WeightConfig`` (per-token int8
  activations, per-channel weights; ``reduce_range`` on a CPU without VNNI, as its docs ask),
  then ``torch.compile`` with inductor's ``freezing`` (its CPU int8 GEMM needs it);
- ``torchao-w8``: torchao's ``Int8WeightOnlyConfig``, then ``torch.compile``;
- ``pt2e-static`` / ``pt2e-dynamic``: ``torch.export``, torchao's PT2E
  (``prepare_pt2e`` with ``X86InductorQuantizer``, calibrated on the same rows,
  ``convert_pt2e``), then ``torch.compile`` with ``freezing`` (the x86 inductor recipe);
- ``ort-static``: ONNX Runtime on the QDQ graph ``export --onnx --int8`` writes for a QAT
  run's Linear (exports/onnx_int8.py's ``QDQLinear`` on fox-static's grids, its weight
  quantizers folded), rows dynamic, ``intra_op_num_threads`` = torch's threads.
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from _routes_common import (
    FLOAT,
    KERNEL,
    MAINTAINED,
    Route,
    calibrate,
    has_vnni,
    optional,
    quiet_loggers,
)
from foxhunt.errors import ConfigError
from foxhunt.quant.kernel import Int8Linear, available
from foxhunt.quant.linear import FakeQuantLinear, QuantizedLinear

ROUTES = (
    "fp32",
    "fox-static",
    "fox-dynamic",
    "torchao-da8w8",
    "torchao-w8",
    "pt2e-static",
    "pt2e-dynamic",
    "ort-static",
)
KINDS = {name: MAINTAINED for name in ROUTES} | {"fp32": FLOAT}
KINDS |= {"fox-static": KERNEL, "fox-dynamic": KERNEL}
TORCHAO = ("torchao-da8w8", "torchao-w8", "pt2e-static", "pt2e-dynamic")
REFERENCE_ROUTE = "fox-static"
CALIBRATION_ROWS = 256


def parse_shape(text: str) -> tuple[int, int]:
    """``IN x OUT`` ("64x128") -> (in_features, out_features)."""
    k, _, n = text.lower().partition("x")
    return int(k), int(n)


class _Layer:
    """The float Linear of one shape, its calibration rows, and what several routes share."""

    def __init__(self, k: int, n: int) -> None:
        torch.manual_seed(k * 1000 + n)
        self.linear = nn.Linear(k, n).eval()
        with torch.no_grad():
            self.linear.weight.normal_(0.0, 0.1)
        self.calibration = torch.randn(CALIBRATION_ROWS, k)
        self.fake = FakeQuantLinear(copy.deepcopy(self.linear)).eval()
        self.fake.input_quant.observing = self.fake.output_quant.observing = True
        with torch.no_grad():
            self.fake(self.calibration)
        self.fake.input_quant.observing = self.fake.output_quant.observing = False
        self.ort_session: Any = None


def _torchao_model(layer: _Layer, name: str, ao: ModuleType, vnni: bool) -> nn.Module:
    model = nn.Sequential(copy.deepcopy(layer.linear)).eval()
    quantization = ao.quantization
    config = (
        quantization.Int8DynamicActivationInt8WeightConfig(reduce_range=not vnni)
        if name == "torchao-da8w8"
        else quantization.Int8WeightOnlyConfig()
    )
    quantization.quantize_(model, config)
    return model


def _pt2e_model(layer: _Layer, name: str, x: Tensor, vnni: bool) -> nn.Module:
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import x86_inductor_quantizer as xiq

    config = xiq.get_default_x86_inductor_quantization_config(
        is_dynamic=name == "pt2e-dynamic", reduce_range=not vnni
    )
    model = nn.Sequential(copy.deepcopy(layer.linear)).eval()
    rows = {0: torch.export.Dim("rows", min=1)}  # calibrated on 256 rows, timed on x's
    exported = torch.export.export(model, (layer.calibration,), dynamic_shapes=(rows,))
    prepared = prepare_pt2e(exported.module(), xiq.X86InductorQuantizer().set_global(config))
    with torch.no_grad():
        prepared(layer.calibration)
    return convert_pt2e(prepared)


def _ort_session(layer: _Layer, threads: int) -> Any:
    """ONNX Runtime on fox-static's Linear as exports/onnx_int8.py writes it, rows dynamic."""
    import onnxruntime as ort

    from foxhunt.exports.onnx_graph import fold_weight_quantizers
    from foxhunt.exports.onnx_int8 import TRANSLATIONS, QDQLinear
    from foxhunt.exports.onnx_trace import DEFAULT_OPSET

    if layer.ort_session is None:
        rows = torch.export.Dim("rows", min=1)
        module = QDQLinear(layer.fake).eval()
        with torch.no_grad(), quiet_loggers("torch.onnx"):  # torchvision's ops, absent
            exported = torch.export.export(
                module, (layer.calibration,), dynamic_shapes=({0: rows},)
            )
            program = torch.onnx.export(
                exported, input_names=["x"], output_names=["y"], opset_version=DEFAULT_OPSET,
                dynamo=True, optimize=True, verbose=False, custom_translation_table=TRANSLATIONS,
            )  # fmt: skip
        assert program is not None
        blob = fold_weight_quantizers(program.model_proto.SerializeToString())
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        layer.ort_session = ort.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
    return layer.ort_session


def _callable(
    name: str, layer: _Layer, x: Tensor, packages: dict[str, Any], threads: int
) -> Callable[[], Tensor]:
    """The route's call on ``x``; compiled routes are compiled by their first call."""
    vnni = packages["vnni"]
    if name == "fp32":
        w, b = layer.linear.weight.detach(), layer.linear.bias.detach()
        return lambda: F.linear(x, w, b)
    if name in ("fox-static", "fox-dynamic"):
        converted = (
            QuantizedLinear.from_fake_quant(layer.fake)
            if name == "fox-static"
            else QuantizedLinear.dynamic(layer.linear)
        )
        ours = Int8Linear.from_converted(converted, packages["kernel"])
        return lambda: ours(x)
    if name == "ort-static":
        session, feed = _ort_session(layer, threads), {"x": x.numpy()}
        return lambda: torch.from_numpy(session.run(None, feed)[0])
    model = (
        _torchao_model(layer, name, packages["torchao"], vnni)
        if name.startswith("torchao")
        else _pt2e_model(layer, name, x, vnni)
    )
    compiled = torch.compile(model, dynamic=False)
    return lambda: compiled(x)


def _first_call(name: str, call: Callable[[], Tensor]) -> Tensor:
    """The first call; inductor's freezing for the int8 compiled routes (their CPU recipe)."""
    if name in TORCHAO:
        import torch._inductor.config as inductor_config

        with inductor_config.patch(freezing=True):
            return call()
    return call()


def packages_for(selected: list[str], flags: set[str]) -> tuple[list[str], dict[str, Any]]:
    """The routes that can run here and what they need; one line for each that cannot."""
    names = [r for r in ROUTES if r in selected]
    packages: dict[str, Any] = {"vnni": has_vnni(flags), "kernel": None}
    if any(KINDS[r] == KERNEL for r in names):
        packages["kernel"] = available()
        if packages["kernel"] is None:
            print("foxhunt's int8 kernel is not available here: fox-static and fox-dynamic skipped")
            names = [r for r in names if KINDS[r] != KERNEL]
    wanted = [r for r in names if r in TORCHAO]
    if wanted:
        with quiet_loggers("torchao", "torch.utils._pytree"):  # its CUDA libraries, absent
            packages["torchao"] = optional("torchao", "bench", wanted)
            if packages["torchao"] is None:
                names = [r for r in names if r not in TORCHAO]
            else:
                import torchao.quantization  # noqa: F401  (quantize_ and its configs)
    if "ort-static" in names:
        from foxhunt.exports.deps import require_onnx

        try:
            require_onnx("the ort-static route")
        except ConfigError as exc:
            print(f"{exc}: skipping ort-static")
            names.remove("ort-static")
    return names, packages


def int8_routes(
    shapes: list[tuple[int, int]],
    rows_list: list[int],
    selected: list[str],
    flags: set[str],
    threads: int,
    target_s: float,
    say: Callable[[str], None],
) -> tuple[list[Route], dict[str, str]]:
    """Every selected route of every (shape, rows), set up (quantized, compiled, checked)."""
    names, packages = packages_for(selected, flags)
    routes: list[Route] = []
    with torch.no_grad():
        for k, n in shapes:
            layer = _Layer(k, n)
            for rows in rows_list:
                cell = f"int8 {k}x{n} rows {rows}"
                x = torch.randn(rows, k, generator=torch.Generator().manual_seed(rows))
                want = F.linear(x, layer.linear.weight, layer.linear.bias)
                for name in names:
                    try:
                        route = _setup(cell, name, layer, x, want, packages, threads)
                    except Exception as exc:  # a route that fails here is reported, not timed
                        print(f"{cell} {name}: FAILED ({type(exc).__name__}: {str(exc)[:300]})")
                        continue
                    calibrate(route, target_s)
                    say(
                        f"{cell} {name}: first call {route.compile_s or 0:.1f} s, {route.reps} per round, {route.error}"
                    )
                    routes.append(route)
    return routes, {r.cell: REFERENCE_ROUTE for r in routes}


def _setup(
    cell: str,
    name: str,
    layer: _Layer,
    x: Tensor,
    want: Tensor,
    packages: dict[str, Any],
    threads: int,
) -> Route:
    start = time.perf_counter()
    with warnings.catch_warnings():  # the exporters' and the lowerings' notes
        warnings.simplefilter("ignore")
        call = _callable(name, layer, x, packages, threads)
        got = _first_call(name, call)
    first = time.perf_counter() - start
    error = (got - want).abs().max().item()
    return Route(
        cell=cell,
        name=name,
        kind=KINDS[name],
        call=call,
        compile_s=first if name in TORCHAO or name == "ort-static" else None,
        error=f"max abs {error:.1e} (of {want.abs().max().item():.1e})",
        grad=False,
    )
