"""Rewrites of an exported ONNX graph (``onnx`` and numpy only)."""

from __future__ import annotations

from typing import Any

import numpy as np


def fold_weight_quantizers(blob: bytes) -> bytes:
    """QuantizeLinear nodes of constant (initializer) inputs replaced by their int8 values,
    so each weight is stored int8 and reaches its MatMul through one DequantizeLinear (the
    form ORT's QDQ fusion looks for); a Transpose between that DequantizeLinear and its
    MatMul is folded into the stored values (its axis moved)."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load_model_from_string(blob)
    graph = proto.graph
    inits = {i.name: i for i in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    value = {name: numpy_helper.to_array(i) for name, i in inits.items()}
    drop, stale = [], set()
    for node in graph.node:
        if node.op_type != "QuantizeLinear" or node.input[0] not in value:
            continue
        if not all(n in value for n in node.input[1:]):
            continue
        x, scale, zero = (value[n] for n in node.input[:3])
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        shape = [1] * x.ndim
        if scale.ndim:
            shape[axis % x.ndim] = -1
        info = np.iinfo(zero.dtype)
        q = np.rint(x / scale.reshape(shape)) + zero.astype(np.int32).reshape(shape)
        q = np.clip(q, info.min, info.max).astype(zero.dtype)
        readers = consumers.get(node.output[0], [])
        dq = readers[0] if len(readers) == 1 else None  # a shared weight keeps its readers
        after = consumers.get(dq.output[0], []) if dq is not None else []
        if len(after) == 1 and after[0].op_type == "Transpose" and x.ndim == 2 and scale.ndim:
            assert dq is not None
            q = q.T  # DQ(W) -> Transpose == DQ(W^T) on the other axis
            _set_axis(dq, 1 - axis % 2)
            transpose = after[0]
            for n in consumers.get(transpose.output[0], []):
                n.input[:] = [dq.output[0] if i == transpose.output[0] else i for i in n.input]
            drop.append(transpose)
            stale.add(dq.output[0])  # its recorded shape was the untransposed one
        if dq is not None and q.dtype == np.int8:  # stored uint8: see _unsigned
            q = _unsigned(graph, dq, q, zero)
        graph.initializer.append(numpy_helper.from_array(q, node.output[0]))
        drop.append(node)
    for node in drop:
        graph.node.remove(node)
    for info in [v for v in graph.value_info if v.name in stale]:
        graph.value_info.remove(info)
    used = {i for n in graph.node for i in n.input}
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)
    return bytes(proto.SerializeToString())


def _unsigned(graph: Any, dq: Any, q: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """The int8 weight as uint8 + 128, its DequantizeLinear's zero point moved by 128: the
    same values, but ORT then runs a u8 x u8 kernel. Its u8 x s8 kernel sums pairs of
    products in int16 (VPMADDUBSW) on CPUs without AVX-512 VNNI, which saturates with full
    range int8 weights (255 x 127 x 2 > 32767): on an AMD EPYC Zen 3 the int8 forecasts of a
    QAT run were 7.5% of their spread off the fake-quant model's (ORT's docs name U8U8 as the
    form without that problem)."""
    from onnx import numpy_helper

    name = f"{dq.input[2]}_u8" if len(dq.input) > 2 and dq.input[2] else f"{dq.output[0]}_zero_u8"
    shifted = (zero.astype(np.int16) + 128).astype(np.uint8)
    if name not in {i.name for i in graph.initializer}:
        graph.initializer.append(numpy_helper.from_array(shifted, name))
    inputs = list(dq.input) + [""] * (3 - len(dq.input))
    inputs[2] = name
    dq.input[:] = inputs
    return (q.astype(np.int16) + 128).astype(np.uint8)


def _set_axis(node: Any, axis: int) -> None:
    from onnx import helper

    kept = [a for a in node.attribute if a.name != "axis"]
    del node.attribute[:]
    node.attribute.extend([*kept, helper.make_attribute("axis", axis)])
