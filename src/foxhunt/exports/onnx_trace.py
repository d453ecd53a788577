"""The ONNX trace of a model: its FP32 graph as serialized bytes, batch axis dynamic.

The graph is traced from the model built by ``build_model`` with its weights, in eval mode,
by ``torch.export``; the variable selection's per-variable GRNs, one custom op there
(``foxhunt::grn_cells``), are replaced by the op's decomposition (``fused_grns.DECOMPOSITIONS``,
the Python function that defines its math) before the ONNX exporter sees the program, and so
are the calls of foxhunt's int8 kernel in a converted model (``foxhunt::int8_linear``,
``quant/int8_op.py``: the reference int8 Linear, quantize-dequantize pairs in ONNX). No
environment switch is needed with the kernels built: each op is one node of the program.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.exports.onnx_spec import OUTPUT, input_shapes, used_inputs
from foxhunt.model import fused_grns
from foxhunt.quant import int8_op
from foxhunt.runs import ONNX_MODEL_FILE, RunConfig

DEFAULT_OPSET = 18
#: the opsets written as asked and run by ONNX Runtime (torch 2.13, onnxruntime 1.32): below
#: 18 the exporter warned and wrote 18, at 26 ONNX Runtime refused the graph, at 30 the
#: exporter printed a traceback and wrote 18
OPSETS = range(18, 26)


class _Graph(nn.Module):
    """The model as a function of named tensors (what the trace sees)."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], config: RunConfig) -> None:
        super().__init__()
        self.model, self.names, self.config = model, names, config

    def forward(self, *tensors: Tensor) -> Tensor:
        given = dict(zip(self.names, tensors, strict=True))
        past = given["past"]
        m = self.config.model.inputs
        static = given.get("static")
        if static is None:
            static = past.new_zeros(past.shape[0], 0)
        future = given.get("future")
        if future is None:
            future = past.new_zeros(past.shape[0], m.horizon, 0)
        batch = TFTBatch(
            static=static,
            past=past,
            future=future,
            static_categorical=given.get("static_categorical"),
            scale=given.get("scale"),
            vol_signal=given.get("vol_signal"),
        )
        quantiles: Tensor = self.model(batch).quantiles
        return quantiles


def _example(config: RunConfig, names: tuple[str, ...], batch: int) -> tuple[Tensor, ...]:
    shapes = input_shapes(config)
    gen = torch.Generator().manual_seed(0)
    tensors = []
    for name in names:
        shape = [batch, *(int(s) for s in shapes[name][1:])]
        if name == "static_categorical":
            cards = torch.tensor(config.model.static_cardinalities).expand(batch, -1)
            tensors.append((torch.rand(shape, generator=gen) * cards).long())
        elif name == "scale":
            tensors.append(torch.rand(shape, generator=gen) + 0.5)
        else:
            tensors.append(torch.randn(shape, generator=gen))
    return tuple(tensors)


def trace(
    model: nn.Module,
    config: RunConfig,
    *,
    opset: int = DEFAULT_OPSET,
    translations: dict[Any, Any] | None = None,
) -> bytes:
    """The ONNX graph (serialized ModelProto) of ``model`` in eval mode, batch axis dynamic;
    ``translations``: the exporter's ``custom_translation_table`` (foxhunt's own ops)."""
    names = used_inputs(config)
    graph = _Graph(model.eval(), names, config).eval()
    batch = torch.export.Dim("batch", min=1)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exported = torch.export.export(
            graph, _example(config, names, 3), dynamic_shapes=(tuple({0: batch} for _ in names),)
        )
        program = torch.onnx.export(
            exported.run_decompositions({**fused_grns.DECOMPOSITIONS, **int8_op.DECOMPOSITIONS}),
            input_names=list(names),
            output_names=[OUTPUT],
            opset_version=opset,
            dynamo=True,
            optimize=True,
            verbose=False,
            custom_translation_table=translations,
        )
    assert program is not None
    with tempfile.TemporaryDirectory() as tmp:
        program.save(Path(tmp) / ONNX_MODEL_FILE)
        return (Path(tmp) / ONNX_MODEL_FILE).read_bytes()
