"""Where a run's checkpoints live and what a resumed run reads back from its folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from foxhunt.data import Preprocessor
from foxhunt.errors import FoxhuntError
from foxhunt.runs import CHECKPOINTS_DIR, PREPROCESSOR_FILE, read_preprocessor


class CheckpointOptions(Protocol):
    """What of the job's options places the checkpoints (JobOptions has it; naming the
    protocol, not JobOptions, keeps job.py -> resume.py one way)."""

    @property
    def checkpoint_storage(self) -> str | None: ...

    @property
    def identity(self) -> dict[str, Any] | None: ...


def load_saved_preprocessor(output_dir: Path) -> Preprocessor:
    path = output_dir / PREPROCESSOR_FILE
    if not path.exists():
        raise FoxhuntError(
            f"--resume {output_dir}: {path} not found; is it the --output-dir of an earlier run?"
        )
    return read_preprocessor(path)  # the checks of load_run; the window is compared later


def checkpoint_location(output_dir: Path, options: CheckpointOptions) -> str:
    """RUN_DIR/checkpoints, or a shared --checkpoint-storage's subfolder for this run id, so
    that two runs sharing it never prune or resume each other's checkpoints."""
    if options.checkpoint_storage is None:
        return str(output_dir / CHECKPOINTS_DIR)
    run_id = (options.identity or {}).get("run_id")
    base = options.checkpoint_storage.rstrip("/")
    return f"{base}/{run_id}" if run_id else base
