"""Saving and loading a run folder's config, weights and preprocessing: a folder alone
rebuilds the model (files.py lists what it holds).

Quantization stays outside: a QAT run's qat.json is stored here as plain JSON, and
``load_run_folder`` takes the transform to re-apply as ``prepare`` (refusing a QAT run
without one). Load through ``foxhunt.serving.load_run``, the one loader of every folder kind
(its run-folder branch, ``foxhunt/trained_run.py``, passes the transforms).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from torch import nn

from foxhunt.data import Preprocessor
from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.migrations import FORMAT, FORMAT_KEY, QAT, sections_of
from foxhunt.model.factory import build_model
from foxhunt.model.size import check_fits_in_memory
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.runs.base import bind_base
from foxhunt.runs.checks import (
    CONFIG_SECTIONS,
    RunFileError,
    check_round_trip,
    check_same_run,
    check_state,
    check_weights_file,
    read_config_sections,
    read_preprocessor,
)
from foxhunt.runs.config import RunConfig, versions
from foxhunt.runs.files import CONFIG_FILE, PREPROCESSOR_FILE, QAT_FILE, WEIGHTS_FILE
from foxhunt.storage import atomic_write_bytes, atomic_write_json
from foxhunt.storage.bounded import read_json_bounded


def weights_bytes(model: nn.Module) -> bytes:
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    return save_safetensors(state)


def save_run_config(run_dir: Path, config: RunConfig, preprocessor: Preprocessor) -> None:
    """Written when training starts, so an interrupted run can be resumed and inspected."""
    run_dir.mkdir(parents=True, exist_ok=True)
    saved = {**config.to_dict(), "model_class": config.model_class, FORMAT_KEY: FORMAT}
    saved["versions"] = versions()
    atomic_write_json(run_dir / CONFIG_FILE, saved)
    preprocessor.save(run_dir / PREPROCESSOR_FILE)


def save_run(
    run_dir: Path, *, model: nn.Module, config: RunConfig, preprocessor: Preprocessor
) -> None:
    save_run_config(run_dir, config, preprocessor)
    atomic_write_bytes(run_dir / WEIGHTS_FILE, weights_bytes(model))


def save_qat_state(run_dir: Path, state: dict[str, Any] | None) -> None:
    """qat.json marks a QAT run (None: an FP32 run, removing a stale marker); it records its
    format (foxhunt/migrations.py)."""
    if state is None:
        (Path(run_dir) / QAT_FILE).unlink(missing_ok=True)
    else:
        atomic_write_json(Path(run_dir) / QAT_FILE, {**state, QAT.key: QAT.current})


def read_qat_state(run_dir: Path) -> dict[str, Any] | None:
    """qat.json in today's format, without it (quant's QATConfig reads it); None for an FP32
    run."""
    path = Path(run_dir) / QAT_FILE
    if not path.is_file():
        return None
    saved = read_json(path)
    if not isinstance(saved, dict):
        raise RunFileError(f"{path}: expected a JSON object, found {type(saved).__name__}")
    try:  # an earlier format's file is migrated to today's first
        return QAT.fields_of(saved)
    except ConfigError as exc:
        raise RunFileError(f"{path}: {exc}") from None


@dataclass(frozen=True)
class LoadedRun:
    config: RunConfig
    model: TemporalFusionTransformer
    preprocessor: Preprocessor


def read_json(path: Path) -> Any:
    if not path.exists():
        raise FoxhuntError(f"{path} not found: is {path.parent} a foxhunt run folder?")
    return read_json_bounded(path)  # size-checked before parsing; names a damaged file


def read_run_config(run_dir: Path) -> RunConfig:
    path = run_dir / CONFIG_FILE
    if not path.exists():
        raise FoxhuntError(f"{path} not found: is {run_dir} a foxhunt run folder?")
    raw = read_config_sections(path)
    try:  # an earlier format's file is migrated to today's first (foxhunt/migrations.py)
        sections = sections_of(raw)
        config = RunConfig.from_dict(sections)
    except FoxhuntError as exc:
        raise RunFileError(f"{path}: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise RunFileError(f"{path}: a field has the wrong type or is missing ({exc})") from None
    rebuilt = config.to_dict()
    check_round_trip(  # the migrated file: a field older runs lack is filled in, not damaged
        path, {k: sections[k] for k in CONFIG_SECTIONS}, {k: rebuilt[k] for k in CONFIG_SECTIONS}
    )
    return config


def read_run_preprocessor(run_dir: Path, config: RunConfig) -> Preprocessor:
    """preprocessor.json, checked against the config's window, with its base volatility's
    fitted filter bound from baseline.json (runs/base.py)."""
    model = config.model
    pre = read_preprocessor(
        run_dir / PREPROCESSOR_FILE, lookback=model.lookback, horizon=model.horizon
    )
    horizon = pre.horizon if model.horizon is None else model.horizon
    bound = bind_base(pre, run_dir, horizon=horizon, quantiles=len(model.quantiles))
    check_same_run(run_dir, config.data, bound)
    return bound


def load_run_folder(
    run_dir: Path,
    *,
    device: str | torch.device = "cpu",
    prepare: Callable[[nn.Module], object] | None = None,
) -> LoadedRun:
    """Rebuild the model and preprocessing of a finished run, refusing damaged files.

    ``prepare``: the transforms applied to the fresh model before its weights load. A QAT
    run saved its fake-quant state, so it is refused without them: load runs through
    ``foxhunt.serving.load_run`` (``trained_run.load_trained_run`` passes them)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FoxhuntError(f"run folder {run_dir} does not exist; pass the --output-dir of a run")
    if prepare is None and (run_dir / QAT_FILE).is_file():
        raise FoxhuntError(
            f"{run_dir} is a QAT run ({QAT_FILE}): its model needs its fake-quant modules "
            "re-applied; load it with foxhunt.serving.load_run"
        )
    config = read_run_config(run_dir)
    weights_path = run_dir / WEIGHTS_FILE
    if not weights_path.exists():
        raise FoxhuntError(f"{weights_path} not found: the run did not finish saving its weights")
    # the config is checked against the RAM before the model is built, and the file's size
    # against the model before it is read
    params = check_fits_in_memory(
        config.model, per_parameter=4, what="loading the model", model_class=config.model_class
    )
    check_weights_file(weights_path, params)
    try:
        state = load_safetensors(weights_path.read_bytes())
    except (SafetensorError, ValueError) as exc:
        raise FoxhuntError(f"{weights_path} is corrupted or truncated ({exc})") from exc
    model = build_model(config.model_class, config.model)
    if prepare is not None:
        prepare(model)
    check_state(weights_path, state, model)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise FoxhuntError(
            f"{weights_path} does not match config.json (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]})"
        )
    preprocessor = read_run_preprocessor(run_dir, config)
    return LoadedRun(config=config, model=model.to(device).eval(), preprocessor=preprocessor)
