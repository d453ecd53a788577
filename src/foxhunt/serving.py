"""Open a trained model folder for forecasting: a run folder or its int8 export, one door.

This is the one place that tells the two apart. It sits above both ``foxhunt.runs`` (which
knows nothing of quantization) and ``foxhunt.exports.int8`` (which reads runs through
``foxhunt.runs``), so neither imports the other back.
"""

from __future__ import annotations

from pathlib import Path

import torch

from foxhunt.exports.int8 import load_export, load_trained_run
from foxhunt.runs import LoadedRun, is_export


def load_run(run_dir: Path, *, device: str | torch.device = "cpu") -> LoadedRun:
    """Rebuild the model and preprocessing of a finished run (or of its int8 export),
    refusing damaged files."""
    if is_export(run_dir):  # an int8 export (foxhunt export): same folder contract
        return load_export(Path(run_dir), device=device)
    return load_trained_run(Path(run_dir), device=device)
