"""The int8 ONNX export of a run: QDQ form (QuantizeLinear / DequantizeLinear around the
Linear layers), run by ONNX Runtime, which fuses each QDQ group into an int8 kernel.

Two routes, recorded in onnx_export.json's ``quantization.method``:

- ``"qat"`` (a run trained with ``--qat``): the fake-quant model itself is traced. Each
  int8 Linear computes ``fq_out(linear(fq_in(x), fq_w(W)))`` with the run's frozen scales and
  zero points: per-tensor uint8 activations in and out, per-output-channel symmetric int8
  weights, which the trace writes as Q/DQ pairs; the weight pairs are then folded into int8
  initializers (``fold_weight_quantizers``). The weights that compute in FP32 in the QAT
  model (per-variable GRNs, folds, output head, LSTM) are its fake-quantized values.
- ``"calibrated"`` (an FP32 run): ORT's ``quantize_static`` on the FP32 graph, the
  activation ranges calibrated on training windows (MinMax), weights per channel; only the
  MatMul / Gemm nodes whose second input is a weight are quantized, like the QAT plan.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.errors import FoxhuntError
from foxhunt.exports.onnx import DEFAULT_OPSET, trace, used_inputs, write_folder
from foxhunt.exports.onnx_graph import fold_weight_quantizers
from foxhunt.model.factory import build_model
from foxhunt.quant.fake import ActivationQuant
from foxhunt.quant.linear import FakeQuantLinear
from foxhunt.quant.transform import plan
from foxhunt.runs import LoadedRun, RunConfig, is_export, is_onnx_export
from foxhunt.trained_run import load_trained_run, read_qat_config

#: training windows the calibrated route feeds ORT's calibrator (evenly spaced)
CALIBRATION_WINDOWS = 256


@torch.library.custom_op("foxhunt::qdq", mutates_args=())
def qdq(x: Tensor, scale: Tensor, zero: Tensor, axis: int) -> Tensor:
    """Fake quantization on the full grid of ``zero``'s dtype (uint8 or int8), per tensor
    when ``scale`` is 0-d, else per channel on ``axis``: traced as one node, which the
    exporter writes as QuantizeLinear -> DequantizeLinear (:data:`TRANSLATIONS`)."""
    info = torch.iinfo(zero.dtype)
    if scale.dim() == 0:
        return torch.fake_quantize_per_tensor_affine(x, float(scale), int(zero), info.min, info.max)
    return torch.fake_quantize_per_channel_affine(x, scale, zero.int(), axis, info.min, info.max)


@qdq.register_fake
def _(x: Tensor, scale: Tensor, zero: Tensor, axis: int) -> Tensor:
    return torch.empty_like(x)


def _qdq_onnx(x: Any, scale: Any, zero: Any, axis: int) -> Any:
    from onnxscript import opset18 as op

    return op.DequantizeLinear(op.QuantizeLinear(x, scale, zero, axis=axis), scale, zero, axis=axis)


#: how the ONNX exporter writes foxhunt's fake-quant op
TRANSLATIONS = {torch.ops.foxhunt.qdq.default: _qdq_onnx}


class Activation(nn.Module):
    """A frozen per-tensor uint8 activation quantizer of the QAT model. A narrower grid than
    0..255 (the x86/fbgemm engines' 7 bits) is a clamp of the input first, which QDQ lacks."""

    def __init__(self, quant: ActivationQuant) -> None:
        super().__init__()
        scale, zero = quant.qparams()
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float32))
        self.register_buffer("zero", torch.tensor(zero, dtype=torch.uint8))
        low, high = (quant.quant_min - zero) * scale, (quant.quant_max - zero) * scale
        narrow = (quant.quant_min, quant.quant_max) != (0, 255)
        self.bounds = (low, high) if narrow else None

    def forward(self, x: Tensor) -> Tensor:
        if self.bounds is not None:
            x = x.clamp(*self.bounds)
        return qdq(x, self.scale, self.zero, 1)


class QDQLinear(nn.Module):
    """A QAT Linear as the fake-quant model computes it in eval mode, its quantizers written
    as :func:`qdq` nodes: per-tensor uint8 input and output, per-channel int8 weight."""

    def __init__(self, layer: FakeQuantLinear) -> None:
        super().__init__()
        linear = layer.linear
        self.weight = nn.Parameter(linear.weight.detach().clone(), requires_grad=False)
        self.bias = None if linear.bias is None else linear.bias.detach().clone()
        wq = layer.weight_quant
        self.register_buffer("w_scale", wq.scale.detach().float().clone())
        self.register_buffer("w_zero", wq.zero_point.detach().to(torch.int8).clone())
        self.inp = Activation(layer.input_quant)
        self.out = Activation(layer.output_quant)

    def forward(self, x: Tensor) -> Tensor:
        w = qdq(self.weight, self.w_scale, self.w_zero, 0)
        return self.out(F.linear(self.inp(x), w, self.bias))


def qdq_model(qat: nn.Module, config: RunConfig) -> nn.Module:
    """A float model computing what the QAT model ``qat`` computes in eval mode: its
    fake-quantized weights baked in, a :class:`QDQLinear` for each int8 Linear."""
    model = build_model(config.model_class, config.model).eval()
    linears = set(plan(model).linears)
    state = {}
    for key in model.state_dict():
        module_name, _, tensor = key.rpartition(".")
        if module_name in linears:  # FakeQuantLinear(linear)
            source = qat.get_submodule(module_name).linear
        else:
            source = qat.get_submodule(module_name) if module_name else qat
        state[key] = getattr(source, tensor).detach()  # a parametrized weight: fake-quantized
    model.load_state_dict(state)
    for name in linears:
        parent, _, child = name.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        layer = qat.get_submodule(name)
        assert isinstance(layer, FakeQuantLinear)
        setattr(owner, child, QDQLinear(layer))
    return model.eval()


def calibrated(blob: bytes, config: RunConfig, windows: list[TFTBatch]) -> bytes:
    """ORT's static QDQ quantization of the FP32 graph ``blob``, calibrated on ``windows``."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    names = used_inputs(config)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds: Iterator[dict[str, np.ndarray]] = iter(
                [{n: _array(getattr(b, n), n) for n in names} for b in windows]
            )

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.feeds, None)

    proto = onnx.load_model_from_string(blob)
    weights = {i.name for i in proto.graph.initializer}
    const = _constant_outputs(proto, weights)
    nodes = [
        n.name
        for n in proto.graph.node
        if n.op_type in ("MatMul", "Gemm") and len(n.input) > 1 and n.input[1] in const
    ]
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        src.write_bytes(blob)
        quantize_static(
            str(src),
            str(dst),
            Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_quantize=nodes,
            calibrate_method=CalibrationMethod.MinMax,
            extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
        )
        return dst.read_bytes()


def _constant_outputs(proto: Any, weights: set[str]) -> set[str]:
    """Names computed from initializers alone (a transposed weight, say)."""
    const = set(weights)
    for node in proto.graph.node:
        if node.input and all(i in const or i == "" for i in node.input):
            const.update(node.output)
    return const


def _array(value: Tensor | None, name: str) -> np.ndarray:
    assert value is not None, name
    dtype = np.int64 if name == "static_categorical" else np.float32
    return value.detach().cpu().numpy().astype(dtype, copy=False)


def calibration_windows(loaded: LoadedRun, count: int = CALIBRATION_WINDOWS) -> list[TFTBatch]:
    """``count`` training windows, evenly spaced, in batches of 32 (the run's own bars)."""
    from foxhunt.data import prepare_data

    path = loaded.config.data.path
    if path is None or not Path(path).is_file():
        raise FoxhuntError(
            f"calibrating the int8 export needs the run's training bars ({path}), which are "
            "not there: train with --qat (the export then uses the QAT scales), or put the "
            "bars back at that path"
        )
    data = prepare_data(loaded.config.data, preprocessor=loaded.preprocessor)
    n = len(data.train)
    index = np.linspace(0, n - 1, min(count, n)).round().astype(int).tolist()
    return [data.train.__getitems__(index[i : i + 32]) for i in range(0, len(index), 32)]


def export_onnx_int8(
    run_dir: Path, output: Path, *, opset: int = DEFAULT_OPSET, fp32_graph: bytes | None = None
) -> dict[str, Any]:
    """Write the int8 (QDQ) ONNX export of ``run_dir`` to ``output``; returns its JSON.
    ``fp32_graph``: an FP32 run's graph already traced at ``opset`` (the ``model.onnx`` of its
    ``export_onnx``), which the calibrated route then quantizes instead of tracing again."""
    run_dir, output = Path(run_dir), Path(output)
    if is_export(run_dir) or is_onnx_export(run_dir):
        raise FoxhuntError(f"{run_dir} is already an export; pass the run folder")
    if output.resolve() == run_dir.resolve():
        raise FoxhuntError("--output must differ from the run folder")
    qat = read_qat_config(run_dir)
    if qat is not None and fp32_graph is not None:
        raise FoxhuntError(f"{run_dir} is a QAT run: its int8 graph is traced from its QAT model")
    if qat is not None:
        loaded = load_trained_run(run_dir)
        blob = fold_weight_quantizers(
            trace(
                qdq_model(loaded.model, loaded.config),
                loaded.config,
                opset=opset,
                translations=TRANSLATIONS,
            )
        )
        how: dict[str, Any] = {"method": "qat", "qat": qat.to_dict()}
    else:
        loaded = load_trained_run(run_dir)
        windows = calibration_windows(loaded)
        graph = fp32_graph or trace(loaded.model, loaded.config, opset=opset)
        blob = calibrated(graph, loaded.config, windows)
        how = {
            "method": "calibrated",
            "calibration": "MinMax",
            "windows": sum(len(w.past) for w in windows),
        }
    how |= {
        "activations": "uint8, per tensor",
        "weights": "int8, per output channel, symmetric",
        "int8_linears": list(
            plan(build_model(loaded.config.model_class, loaded.config.model)).linears
        ),
    }
    return write_folder(run_dir, output, loaded, blob, precision="int8", quantization=how)
