"""Open a trained model folder for forecasting: a run folder, its int8 or its ONNX export.

This is the one place that tells them apart. It sits above both ``foxhunt.runs`` (which
knows nothing of quantization) and ``foxhunt.exports`` (which read runs through
``foxhunt.runs``), so neither imports the other back.
"""

from __future__ import annotations

from pathlib import Path

import torch

from foxhunt.exports.int8 import load_export, load_trained_run
from foxhunt.exports.onnx_runtime import load_onnx_run
from foxhunt.runs import LoadedRun, is_export, is_onnx_export


def load_run(run_dir: Path, *, device: str | torch.device = "cpu") -> LoadedRun:
    """Rebuild the model and preprocessing of a finished run (or of its int8 or ONNX
    export), refusing damaged files."""
    if is_onnx_export(run_dir):  # foxhunt export --onnx: ONNX Runtime computes the model
        return load_onnx_run(Path(run_dir), device=device)
    if is_export(run_dir):  # an int8 export (foxhunt export): same folder contract
        return load_export(Path(run_dir), device=device)
    return load_trained_run(Path(run_dir), device=device)
