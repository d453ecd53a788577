"""The one way to load a trained model folder: a run folder (FP32 or QAT), its int8 export
or its ONNX export, each returned ready to forecast.

This is the one place that tells the folder kinds apart. It sits above ``foxhunt.runs``
(which knows nothing of quantization), ``foxhunt.trained_run`` (a run folder's model with
the transforms it trained with: checkpointing, a QAT run's fake quantization) and
``foxhunt.exports`` (which load the run they export through ``trained_run``), so none of
them imports another back.
"""

from __future__ import annotations

from pathlib import Path

import torch

from foxhunt.exports.int8 import load_export
from foxhunt.exports.onnx_runtime import load_onnx_run
from foxhunt.runs import LoadedRun, is_export, is_onnx_export
from foxhunt.trained_run import load_trained_run


def load_run(run_dir: Path, *, device: str | torch.device = "cpu") -> LoadedRun:
    """Rebuild the model and preprocessing of a finished run (or of its int8 or ONNX
    export), refusing damaged files. A QAT run's model comes back with its fake-quant
    modules and frozen scales: the model it trained, whose forecasts it scored."""
    if is_onnx_export(run_dir):  # foxhunt export --onnx: ONNX Runtime computes the model
        return load_onnx_run(Path(run_dir), device=device)
    if is_export(run_dir):  # an int8 export (foxhunt export): same folder contract
        return load_export(Path(run_dir), device=device)
    return load_trained_run(Path(run_dir), device=device)
