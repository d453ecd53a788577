"""Where a run's checkpoints live and what a resumed run reads back from its folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from foxhunt.baselines.base import CANDIDATES
from foxhunt.data import Preprocessor
from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.migrations import sections_of
from foxhunt.runs import (
    CHECKPOINTS_DIR,
    CONFIG_FILE,
    METRICS_FILE,
    PREPROCESSOR_FILE,
    RunConfig,
    metrics_base,
    read_preprocessor,
)
from foxhunt.storage.bounded import read_json_bounded
from foxhunt.storage.remote import open_storage
from foxhunt.training.checkpoint import RESUMABLE_CHANGES, config_differences, resume_point
from foxhunt.training.checkpoint_format import read_files
from foxhunt.training.threads import check_requested


class CheckpointOptions(Protocol):
    """What of the job's options places the checkpoints (JobOptions has it; naming the
    protocol, not JobOptions, keeps job.py -> resume.py one way)."""

    @property
    def checkpoint_storage(self) -> str | None: ...

    @property
    def identity(self) -> dict[str, Any] | None: ...

    @property
    def resume_from(self) -> int | None: ...


def load_saved_preprocessor(output_dir: Path) -> Preprocessor:
    path = output_dir / PREPROCESSOR_FILE
    if not path.exists():
        raise FoxhuntError(
            f"--resume {output_dir}: {path} not found; is it the --output-dir of an earlier run?"
        )
    return read_preprocessor(path)  # the checks of load_run; the window is compared later


def trained_base(output_dir: Path, saved: str) -> str:
    """The base a resumed run's network trained on: `saved` (preprocessor.json's), unless
    metrics.json says a fallback head was served on another (`base.trained_on`)."""
    base = metrics_base(output_dir / METRICS_FILE)
    trained = base.get("trained_on") if base is not None else None
    return trained if trained in CANDIDATES else saved


def check_resumable_config(output_dir: Path, config: RunConfig) -> None:
    """Refuse a resume whose settings differ from the run's config.json before the job
    rewrites it: the checkpoint refused them only after config.json held the new ones."""
    path = output_dir / CONFIG_FILE
    if not path.is_file():
        return  # the checkpoint's own config is still compared on restore
    saved = read_json_bounded(path)
    if not isinstance(saved, dict):
        raise FoxhuntError(f"{path} is not a JSON object; the run folder is damaged")
    # its format stays: config_differences migrates an earlier one (foxhunt/migrations.py)
    saved = {k: v for k, v in saved.items() if k not in ("model_class", "versions")}
    differences = config_differences(saved, config.to_dict())
    if differences:
        raise ConfigError(
            f"--resume {output_dir}: the run was trained with other settings "
            f"({'; '.join(differences)}); resume with its settings (only "
            f"{', '.join(sorted(RESUMABLE_CHANGES))} may change) or train a new run"
        )


def check_checkpoint_config(
    output_dir: Path, options: CheckpointOptions, config: RunConfig
) -> None:
    """Refuse a resume whose settings differ from the checkpoint it will restore, before the
    job rewrites config.json: a config.json edited to agree with the new settings was
    replaced, then the checkpoint refused them. A checkpoint that is missing or cannot be
    read is left to the restore, which names it."""
    storage = open_storage(checkpoint_location(output_dir, options))
    try:
        name = resume_point(storage, options.resume_from)
        document, _ = read_files(storage.load(name))
        saved = document["config"]
    except Exception:  # the restore names a missing or damaged checkpoint
        return
    differences = config_differences(saved, config.to_dict())
    if differences:
        raise ConfigError(
            f"--resume {output_dir}: {storage.describe(name)} was written by a different "
            f"configuration ({'; '.join(differences)}); resume with its settings or train a "
            "new run (config.json is left as it was)"
        )


def recorded_threads(output_dir: Path) -> int | str | None:
    """The thread count a run's config.json records (``training.threads``): the count it
    trained at; 0 ("auto") in runs saved before counts were recorded; None without a file."""
    path = output_dir / CONFIG_FILE
    if not path.is_file():
        return None
    saved = read_json_bounded(path)
    training = saved.get("training") if isinstance(saved, dict) else None
    if not isinstance(training, dict):
        raise FoxhuntError(f"{path} has no training section; the run folder is damaged")
    try:  # a run of an earlier format reads as it was made (foxhunt/migrations.py)
        threads = sections_of(saved)["training"].get("threads")
        check_requested(threads)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return threads


def checkpoint_location(output_dir: Path, options: CheckpointOptions) -> str:
    """RUN_DIR/checkpoints, or a shared --checkpoint-storage's subfolder for this run id, so
    that two runs sharing it never prune or resume each other's checkpoints."""
    if options.checkpoint_storage is None:
        return str(output_dir / CHECKPOINTS_DIR)
    run_id = (options.identity or {}).get("run_id")
    base = options.checkpoint_storage.rstrip("/")
    return f"{base}/{run_id}" if run_id else base
