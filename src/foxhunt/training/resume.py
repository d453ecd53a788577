"""Where a run's checkpoints live and what a resumed run reads back from its folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from foxhunt.data import Preprocessor
from foxhunt.errors import FoxhuntError
from foxhunt.run import PREPROCESSOR_FILE
from foxhunt.run_checks import read_preprocessor

if TYPE_CHECKING:
    from foxhunt.training.job import JobOptions


def load_saved_preprocessor(output_dir: Path) -> Preprocessor:
    path = output_dir / PREPROCESSOR_FILE
    if not path.exists():
        raise FoxhuntError(
            f"--resume {output_dir}: {path} not found; is it the --output-dir of an earlier run?"
        )
    return read_preprocessor(path)  # the checks of load_run; the window is compared later


def checkpoint_location(output_dir: Path, options: JobOptions) -> str:
    """RUN_DIR/checkpoints, or a shared --checkpoint-storage's subfolder for this run id, so
    that two runs sharing it never prune or resume each other's checkpoints."""
    if options.checkpoint_storage is None:
        return str(output_dir / "checkpoints")
    run_id = (options.identity or {}).get("run_id")
    base = options.checkpoint_storage.rstrip("/")
    return f"{base}/{run_id}" if run_id else base
