"""The FP32 ONNX export of a run folder: the folder and its onnx_export.json.

    EXPORT_DIR/
      config.json          the run's config (data, model, training)
      preprocessor.json    the run's fitted preprocessing
      baseline.json        the run's historical baseline (for evaluate)
      model.onnx           the FP32 graph: dynamic batch axis, output ``quantiles`` [B, H, Q]
      onnx_export.json     what a consumer in another language needs (docs/export.md)

The graph is traced by ``onnx_trace.py``; onnx_export.json's contents are ``onnx_spec.py``'s.
``foxhunt predict`` and ``foxhunt evaluate`` take the folder in place of the run folder
(``foxhunt.serving``); its loader under ONNX Runtime is ``onnx_runtime.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foxhunt.errors import FoxhuntError
from foxhunt.exports.onnx_spec import (
    FORMAT,
    INPUTS,
    OUTPUT,
    PRECISIONS,
    input_shapes,
    onnx_spec,
    used_inputs,
)
from foxhunt.exports.onnx_trace import DEFAULT_OPSET, OPSETS, trace
from foxhunt.runs import (
    BASELINE_FILE,
    CONFIG_FILE,
    ONNX_MODEL_FILE,
    ONNX_SPEC_FILE,
    PREPROCESSOR_FILE,
    LoadedRun,
    is_export,
    is_onnx_export,
    read_qat_state,
)
from foxhunt.storage import atomic_write_bytes, atomic_write_json
from foxhunt.trained_run import load_trained_run

#: the names the CLI, the int8 exporter and the ONNX Runtime loader import from here
__all__ = [
    "DEFAULT_OPSET",
    "FORMAT",
    "INPUTS",
    "OPSETS",
    "OUTPUT",
    "PRECISIONS",
    "export_onnx",
    "input_shapes",
    "trace",
    "used_inputs",
    "write_folder",
]


def export_onnx(run_dir: Path, output: Path, *, opset: int = DEFAULT_OPSET) -> dict[str, Any]:
    """Write the FP32 ONNX export of the run folder ``run_dir`` to ``output``; returns its
    onnx_export.json."""
    run_dir, output = Path(run_dir), Path(output)
    if is_export(run_dir) or is_onnx_export(run_dir):
        raise FoxhuntError(f"{run_dir} is already an export; pass the run folder")
    if read_qat_state(run_dir) is not None:
        raise FoxhuntError(
            f"{run_dir} is a QAT run: export it with `foxhunt export --onnx --int8` (int8 "
            "from its QAT scales; the FP32 ONNX export takes FP32 runs)"
        )
    if output.resolve() == run_dir.resolve():
        raise FoxhuntError("--output must differ from the run folder")
    loaded = load_trained_run(run_dir)
    blob = trace(loaded.model, loaded.config, opset=opset)
    return write_folder(run_dir, output, loaded, blob, precision="fp32")


def write_folder(
    run_dir: Path, output: Path, loaded: LoadedRun, blob: bytes, **extra: Any
) -> dict[str, Any]:
    """Write ``blob`` as model.onnx, the run's files and onnx_export.json (plus ``extra``
    keys) to ``output``; returns the JSON."""
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(output / ONNX_MODEL_FILE, blob)
    for name in (CONFIG_FILE, PREPROCESSOR_FILE, BASELINE_FILE):
        if (run_dir / name).is_file():
            atomic_write_bytes(output / name, (run_dir / name).read_bytes())
    names = used_inputs(loaded.config)
    pre = loaded.preprocessor.state_dict()
    spec = onnx_spec(loaded.config, pre, names, _opset(blob), run_dir) | extra
    atomic_write_json(output / ONNX_SPEC_FILE, spec)
    return spec


def _opset(blob: bytes) -> int:
    import onnx

    proto = onnx.load_model_from_string(blob)
    return max(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
