"""A run folder's model as it trained, and its QAT marker (qat.json as a ``QATConfig``).

``foxhunt.serving.load_run`` is the one loader of every folder kind; this is its run-folder
branch, kept below ``exports`` so that the exporters (which sit below ``serving``) load the
run they export the same way. The model comes back ready: built from config.json, with the
transforms it trained with (checkpointing; a QAT run's fake quantization, ``prepare_qat``)
applied before its weights load. ``foxhunt.runs`` knows no quantization: it stores qat.json
as plain JSON, and its ``load_run_folder`` refuses a QAT run unless given the transform.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from foxhunt.errors import ConfigError
from foxhunt.quant.config import QATConfig
from foxhunt.runs import LoadedRun, load_run_folder, read_qat_state, read_run_config, save_qat_state
from foxhunt.transforms import apply_model_transforms


def save_qat_config(run_dir: Path, config: QATConfig | None) -> None:
    """Mark ``run_dir`` as a QAT run (None: as an FP32 run, removing a stale marker)."""
    save_qat_state(run_dir, None if config is None else config.to_dict())


def read_qat_config(run_dir: Path) -> QATConfig | None:
    """The QAT config of a run folder, None for an FP32 run."""
    state = read_qat_state(run_dir)
    return None if state is None else QATConfig.from_dict(state)


def run_qat_config(run_dir: Path, requested: QATConfig | None, *, resume: bool) -> QATConfig | None:
    """The QAT config a training job uses: the requested one, or on ``--resume`` the one the
    run was started with (a different requested one is refused)."""
    if not resume:
        return requested
    saved = read_qat_config(run_dir)
    if requested is not None and requested != saved:
        raise ConfigError(
            f"--resume {run_dir}: the run was started with QAT {saved}, not {requested}; "
            "resume without --qat flags to continue it as it was started"
        )
    return saved


def load_trained_run(run_dir: Path, *, device: str | torch.device = "cpu") -> LoadedRun:
    """A run folder's model as trained: a QAT run's fake-quant state loads into a freshly
    prepared model (the same transforms), an FP32 run's into the plain one."""
    qat = read_qat_config(run_dir)
    model_config = read_run_config(Path(run_dir)).model

    def prepare(model: nn.Module) -> None:  # the transforms it trained with; DDP aside
        apply_model_transforms(model, model_config, qat=qat)

    return load_run_folder(run_dir, device=device, prepare=prepare)
