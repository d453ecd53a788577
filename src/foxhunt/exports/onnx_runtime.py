"""An ONNX export folder under ONNX Runtime (CPU): its onnx_export.json read and checked
against config.json and the graph, and the model called like the TFT (``forward(TFTBatch)``),
for ``foxhunt.serving``, ``foxhunt predict`` / ``evaluate`` and the Python API. The folder's
format is the writer's (``onnx.py``; docs/export.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from foxhunt.batch import TFTBatch
from foxhunt.errors import FoxhuntError
from foxhunt.exports.deps import require_onnx
from foxhunt.exports.onnx import FORMAT, OUTPUT, PRECISIONS, input_shapes
from foxhunt.runs import (
    CONFIG_FILE,
    ONNX_MODEL_FILE,
    ONNX_SPEC_FILE,
    LoadedRun,
    read_json,
    read_run_config,
    read_run_preprocessor,
)


@dataclass(frozen=True)
class OnnxOutput:
    """What the ONNX model returns: ``quantiles`` [B, H, Q] (as TFTOutput's)."""

    quantiles: Tensor


class OnnxModel(nn.Module):
    """model.onnx under ONNX Runtime (CPU), called like the TFT: forward(TFTBatch)."""

    def __init__(self, path: Path, spec: dict[str, Any]) -> None:
        super().__init__()
        require_onnx(f"the ONNX export {path.parent}", ("onnxruntime",))
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, torch.get_num_threads())
        try:
            self.session = ort.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise FoxhuntError(f"{path} is damaged ({type(exc).__name__})") from None
        self.spec = spec
        self.precision = spec.get("precision", "fp32")
        self.names = tuple(i.name for i in self.session.get_inputs())
        expected = [i["name"] for i in spec["inputs"]]
        if list(self.names) != expected:
            raise FoxhuntError(f"{path}: inputs {list(self.names)} differ from {ONNX_SPEC_FILE}'s")

    def predict(self, batch: TFTBatch) -> OnnxOutput:
        feeds: dict[str, np.ndarray] = {}
        for name in self.names:
            value = getattr(batch, name)
            if value is None:
                raise ValueError(f"batch.{name}: this model needs it, got None")
            dtype = np.int64 if name == "static_categorical" else np.float32
            feeds[name] = value.detach().cpu().numpy().astype(dtype, copy=False)
        (out,) = self.session.run([OUTPUT], feeds)
        return OnnxOutput(quantiles=torch.from_numpy(out))

    def forward(self, batch: TFTBatch) -> OnnxOutput:
        return self.predict(batch)


def read_spec(folder: Path) -> dict[str, Any]:
    path = Path(folder) / ONNX_SPEC_FILE
    if not path.is_file():
        raise FoxhuntError(f"{path} not found: the export did not finish")
    try:
        spec = read_json(path)  # names the file itself when it is not JSON
    except (ValueError, OSError) as exc:
        raise FoxhuntError(f"{path} is damaged ({exc})") from None
    if not isinstance(spec, dict) or spec.get("format") != FORMAT:
        raise FoxhuntError(f"{path}: unknown export format; re-export the run")
    if spec.get("precision", "fp32") not in PRECISIONS:  # older FP32 exports lack the key
        raise FoxhuntError(
            f"{path}: precision {spec.get('precision')!r} is not one of {PRECISIONS}"
        )
    return spec


def load_onnx(folder: Path) -> OnnxModel:
    """The ONNX model of an export folder (``.predict(batch)``)."""
    folder = Path(folder)
    spec = read_spec(folder)
    path = folder / ONNX_MODEL_FILE
    if not path.is_file():
        raise FoxhuntError(f"{path} not found: the export did not finish")
    quantized = b"DequantizeLinear" in path.read_bytes()  # an op type, stored as plain text
    if quantized != (spec.get("precision", "fp32") == "int8"):
        raise FoxhuntError(
            f"{path} is {'int8' if quantized else 'FP32'}, {ONNX_SPEC_FILE} says "
            f"{spec.get('precision', 'fp32')}: re-export the run"
        )
    return OnnxModel(path, spec)


def load_onnx_run(folder: Path, *, device: str | torch.device = "cpu") -> LoadedRun:
    """An ONNX export folder as a run: its config, ONNX Runtime model and preprocessing."""
    folder = Path(folder)
    if torch.device(device).type != "cpu":
        raise FoxhuntError(f"{folder} is an ONNX export: it runs on the CPU only")
    model = load_onnx(folder)
    config = read_run_config(folder)
    spec = model.spec
    m = config.model
    for key, want in (("lookback", m.lookback), ("horizon", m.horizon)):
        if spec.get(key) != want:
            raise FoxhuntError(
                f"{folder / ONNX_SPEC_FILE}: {key} {spec.get(key)} differs from "
                f"{CONFIG_FILE}'s {want}; re-export the run"
            )
    if spec.get("quantiles") != list(m.quantiles):
        raise FoxhuntError(f"{folder / ONNX_SPEC_FILE}: quantiles differ from {CONFIG_FILE}'s")
    shapes = input_shapes(config)
    for given in model.session.get_inputs():
        dims = [d if isinstance(d, int) else "batch" for d in given.shape]
        if dims != shapes.get(given.name):
            raise FoxhuntError(
                f"{folder / ONNX_MODEL_FILE}: input {given.name} has shape {dims}, "
                f"{CONFIG_FILE} says {shapes.get(given.name)}; re-export the run"
            )
    preprocessor = read_run_preprocessor(folder, config)
    # duck-typed: forward(TFTBatch) -> .quantiles, all predict and evaluate read
    return LoadedRun(config=config, model=model, preprocessor=preprocessor)  # type: ignore[arg-type]
