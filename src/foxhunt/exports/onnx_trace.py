"""The ONNX trace of a model: its FP32 graph as serialized bytes, batch axis dynamic.

The graph is traced from the model built by ``build_model`` with its weights, in eval mode;
the variable selection's per-variable GRNs run as plain, out-of-place tensor ops for the trace
(the same math as the fused C++ kernel and its blocked ATen twin, whose row blocks and
in-place writes a trace would freeze at the example's batch size).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.exports.onnx_spec import OUTPUT, input_shapes, used_inputs
from foxhunt.model.variable_grns import VariableGRNs
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


def _plain_grns(self: VariableGRNs, z: Tensor, in_weight: Tensor, weights: Tensor) -> Tensor:
    """VariableGRNs.forward in eval mode as out-of-place ops on the whole batch (fused_grns'
    math: [eta_2, 1] = ELU(z W), [eta_1, 1] = [eta_2, 1] fc2, GLU + skip, LayerNorm, sum)."""
    g, d = self.hidden_size, self.output_size
    ones = torch.ones_like(self.fc2_bias[:, :1]).unsqueeze(1)  # [n, 1, 1]
    fc2 = torch.cat([self.fc2_weight, self.fc2_bias.unsqueeze(1)], 1)  # [n, g + 1, g]
    carry = torch.cat([torch.zeros_like(fc2[..., :g, :1]), ones], 1)  # [n, g + 1, 1]
    fc2 = torch.cat([fc2, carry], -1)  # [n, g + 1, g + 1]
    glu = torch.cat([self.glu_weight, self.glu_bias.unsqueeze(1)], 1)  # [n, g + 1, 2d]
    a2 = F.elu(torch.bmm(z, in_weight[..., : g + 1]))
    gl = torch.bmm(torch.bmm(a2, fc2), glu)  # [n, R, 2d]
    y = F.glu(gl, dim=-1) + torch.bmm(z, in_weight[..., g + 1 :])  # [n, R, d]
    normed = F.layer_norm(y, (d,), None, None, 1e-5) * self.norm_weight.unsqueeze(1)
    out = (normed * weights.t().unsqueeze(-1)).sum(0)  # [R, d]
    return out + weights @ self.norm_bias


@contextlib.contextmanager
def _traceable(model: nn.Module) -> Iterator[None]:
    """Swap the plain GRNs in for the fused op while tracing; the C++ kernels stay off."""
    swapped = [m for m in model.modules() if isinstance(m, VariableGRNs)]
    old = os.environ.get("FOXHUNT_FUSED_KERNEL")
    os.environ["FOXHUNT_FUSED_KERNEL"] = "0"
    for m in swapped:
        m.forward = types.MethodType(_plain_grns, m)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for m in swapped:
            del m.forward
        if old is None:
            os.environ.pop("FOXHUNT_FUSED_KERNEL", None)
        else:
            os.environ["FOXHUNT_FUSED_KERNEL"] = old


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
    with _traceable(model), torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            graph,
            _example(config, names, 3),
            input_names=list(names),
            output_names=[OUTPUT],
            dynamic_shapes=(tuple({0: batch} for _ in names),),
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
