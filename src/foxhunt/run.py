"""A run folder: weights, the config that built them and the fitted preprocessing, together.

A folder alone rebuilds the model: `load_run(dir)` needs nothing else.

    run_dir/
      config.json        data, model and training config + versions
      model.safetensors  weights (no pickle)
      preprocessor.json  fitted scalers and category encoders
      metrics.json       test metrics of the TFT and the baselines
      baseline.json      what the baselines fitted on train (historical quantiles per step,
                         intraday profiles, GARCH parameters), for `evaluate` to reuse
      test_forecasts.parquet  every test window's forecasts, the TFT's and the baselines'
      history.jsonl      one line per epoch (and memory events)
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from foxhunt.data import DataConfig, Preprocessor
from foxhunt.errors import FoxhuntError
from foxhunt.model.config import TFTConfig
from foxhunt.model.size import check_fits_in_memory
from foxhunt.model.tft import TemporalFusionTransformer
from foxhunt.run_checks import (
    RunFileError,
    check_round_trip,
    check_state,
    check_weights_file,
    read_config_sections,
    read_preprocessor,
)
from foxhunt.storage import atomic_write_bytes, atomic_write_json
from foxhunt.storage.bounded import read_json_bounded
from foxhunt.training.config import TrainingConfig

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
PREPROCESSOR_FILE = "preprocessor.json"
METRICS_FILE = "metrics.json"
HISTORY_FILE = "history.jsonl"
BASELINE_FILE = "baseline.json"


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything that defines a run, split by concern."""

    data: DataConfig
    model: TFTConfig
    training: TrainingConfig

    def to_dict(self) -> dict[str, Any]:
        return {
            "data": self.data.to_dict(),
            "model": self.model.to_dict(),
            "training": self.training.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        return cls(
            data=DataConfig.from_dict(data["data"]),
            model=TFTConfig.from_dict(data["model"]),
            training=TrainingConfig.from_dict(data["training"]),
        )


def versions() -> dict[str, str]:
    from foxhunt import __version__

    return {"foxhunt": __version__, "torch": torch.__version__, "python": platform.python_version()}


def weights_bytes(model: torch.nn.Module) -> bytes:
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    return save_safetensors(state)


def save_run_config(run_dir: Path, config: RunConfig, preprocessor: Preprocessor) -> None:
    """Written when training starts, so an interrupted run can be resumed and inspected."""
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / CONFIG_FILE, {**config.to_dict(), "versions": versions()})
    preprocessor.save(run_dir / PREPROCESSOR_FILE)


def save_run(
    run_dir: Path, *, model: torch.nn.Module, config: RunConfig, preprocessor: Preprocessor
) -> None:
    save_run_config(run_dir, config, preprocessor)
    atomic_write_bytes(run_dir / WEIGHTS_FILE, weights_bytes(model))


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
    sections = read_config_sections(path)
    try:
        config = RunConfig.from_dict(sections)
    except FoxhuntError as exc:
        raise RunFileError(f"{path}: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise RunFileError(f"{path}: a field has the wrong type or is missing ({exc})") from None
    check_round_trip(path, sections, config.to_dict())
    return config


def load_run(run_dir: Path, *, device: str | torch.device = "cpu") -> LoadedRun:
    """Rebuild the model and preprocessing of a finished run (or of its int8 export),
    refusing damaged files."""
    from foxhunt.quant.export import is_export, load_export, read_qat_config  # imports this
    from foxhunt.transforms import apply_model_transforms

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FoxhuntError(f"run folder {run_dir} does not exist; pass the --output-dir of a run")
    if is_export(run_dir):  # an int8 export (foxhunt export): same folder contract
        return load_export(run_dir, device=device)
    config = read_run_config(run_dir)
    weights_path = run_dir / WEIGHTS_FILE
    if not weights_path.exists():
        raise FoxhuntError(f"{weights_path} not found: the run did not finish saving its weights")
    # the config is checked against the RAM before the model is built, and the file's size
    # against the model before it is read
    params = check_fits_in_memory(config.model, per_parameter=4, what="loading the model")
    check_weights_file(weights_path, params)
    try:
        state = load_safetensors(weights_path.read_bytes())
    except (SafetensorError, ValueError) as exc:
        raise FoxhuntError(f"{weights_path} is corrupted or truncated ({exc})") from exc
    model = TemporalFusionTransformer(config.model)
    qat = read_qat_config(run_dir)
    apply_model_transforms(model, config.model, qat=qat)  # a QAT run loads into the same transform
    check_state(weights_path, state, model)
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise FoxhuntError(
            f"{weights_path} does not match config.json (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]})"
        )
    preprocessor = read_preprocessor(
        run_dir / PREPROCESSOR_FILE, lookback=config.model.lookback, horizon=config.model.horizon
    )
    return LoadedRun(config=config, model=model.to(device).eval(), preprocessor=preprocessor)


def append_history(run_dir: Path, record: dict[str, Any]) -> None:
    with (run_dir / HISTORY_FILE).open("a") as f:
        f.write(json.dumps(record) + "\n")
