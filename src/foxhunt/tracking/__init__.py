"""Experiment tracking: TensorBoard and MLflow loggers on the trainer's callback seam.

Sits above `training/` (it is a `Callback`) and the run folder; only the doors import it.
Importing it imports neither tensorboard nor mlflow: each sink imports its package when it
starts, and `check_installed` (called before training) says what to install if one is
missing. Under DDP the door builds a tracker on the main rank only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from foxhunt.lazy import lazy_exports
from foxhunt.tracking.config import LOGGERS, TrackingConfig
from foxhunt.tracking.deps import check_installed

if TYPE_CHECKING:
    from foxhunt.tracking.mlflow_sink import MlflowSink
    from foxhunt.tracking.tensorboard_sink import TensorBoardSink
    from foxhunt.tracking.tracker import Sink, Tracker

__all__ = [
    "LOGGERS",
    "MlflowSink",
    "TensorBoardSink",
    "Tracker",
    "TrackingConfig",
    "build_tracker",
    "check_installed",
    "default_mlflow_uri",
]

#: the sinks and the tracker (the run folder, torch), imported on first use: the config and
#: the package check alone (`foxhunt train --help`) import neither
_LAZY = {
    "MlflowSink": "foxhunt.tracking.mlflow_sink",
    "TensorBoardSink": "foxhunt.tracking.tensorboard_sink",
    "Tracker": "foxhunt.tracking.tracker",
}

__getattr__ = lazy_exports(__name__, _LAZY)


def default_mlflow_uri(run_dir: Path) -> str:
    """A SQLite store beside the run folder (MLflow 3 refuses new file stores by default)."""
    return f"sqlite:///{(Path(run_dir).parent / 'mlflow.db').absolute()}"


def build_tracker(
    config: TrackingConfig, run_dir: Path, workdir: Path | None = None
) -> Tracker | None:
    """The tracker `config` asks for, or None when no logger is on. `run_dir` is the run's
    final folder (names the MLflow run; its parent holds the default store), `workdir`
    where the job writes it now (the staging folder of an --overwrite; default run_dir)."""
    from foxhunt.runs import TENSORBOARD_DIR
    from foxhunt.tracking.mlflow_sink import MlflowSink
    from foxhunt.tracking.places import check_tracking_places
    from foxhunt.tracking.tensorboard_sink import TensorBoardSink
    from foxhunt.tracking.tracker import Tracker

    if not config.active:
        return None
    run_dir = Path(run_dir)
    workdir = Path(workdir or run_dir)
    check_tracking_places(config, run_dir)  # before anything is trained or logged
    sinks: list[Sink] = []
    if "tensorboard" in config.active:
        logdir = Path(config.tracking_dir) if config.tracking_dir else workdir / TENSORBOARD_DIR
        sinks.append(TensorBoardSink(logdir))
    if "mlflow" in config.active:
        uri = config.tracking_uri or default_mlflow_uri(run_dir)
        root = None if config.tracking_uri else run_dir.parent.absolute() / "mlartifacts"
        sinks.append(
            MlflowSink(uri, experiment=config.experiment, run_name=run_dir.name, artifact_root=root)
        )
    return Tracker(sinks, workdir, log_every=config.log_every)
