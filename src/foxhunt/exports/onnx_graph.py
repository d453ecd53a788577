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


def _set_axis(node: Any, axis: int) -> None:
    from onnx import helper

    kept = [a for a in node.attribute if a.name != "axis"]
    del node.attribute[:]
    node.attribute.extend([*kept, helper.make_attribute("axis", axis)])
