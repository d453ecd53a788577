"""Tracking settings: which loggers, and where they write. How the job runs, not what the run
is: never part of config.json, so a run tracked or not is the same run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from foxhunt.errors import ConfigError

Logger = Literal["tensorboard", "mlflow", "none"]
LOGGERS: tuple[str, ...] = get_args(Logger)


@dataclass(frozen=True, kw_only=True)
class TrackingConfig:
    """Experiment tracking of a training run (docs/tracking.md); off by default.

    Attributes:
        loggers: any of "tensorboard" and "mlflow" (each at most once); () or ("none",) = off.
        tracking_dir: TensorBoard's event folder; None = RUN/tensorboard.
        tracking_uri: MLflow's tracking URI (sqlite:///..., file:///..., http://...); None =
            a SQLite store beside the run folder, RUN/../mlflow.db, with its artifacts in
            RUN/../mlartifacts (one store for the runs of a folder, so the UI compares them).
        experiment: the MLflow experiment the run is logged to (created if absent).
        log_every: optimizer steps between per-step scalars (loss, learning rate, gradient
            norm, step time, memory, skipped steps); epochs always log (>= 1).
    """

    loggers: tuple[Logger, ...] = ()
    tracking_dir: str | None = None
    tracking_uri: str | None = None
    experiment: str = "foxhunt"
    log_every: int = 10

    def __post_init__(self) -> None:
        unknown = [name for name in self.loggers if name not in LOGGERS]
        if unknown:
            raise ConfigError(f"tracking.loggers: unknown {unknown}; choose from {LOGGERS}")
        if "none" in self.loggers and len(self.loggers) > 1:
            raise ConfigError("tracking.loggers: 'none' cannot be combined with other loggers")
        if len(set(self.loggers)) != len(self.loggers):
            raise ConfigError(f"tracking.loggers: each logger at most once, got {self.loggers}")
        if isinstance(self.log_every, bool) or not isinstance(self.log_every, int):
            raise ConfigError(f"tracking.log_every must be an integer, got {self.log_every!r}")
        if self.log_every < 1:
            raise ConfigError(f"tracking.log_every must be >= 1, got {self.log_every}")
        if not self.experiment:
            raise ConfigError("tracking.experiment must not be empty")

    @property
    def active(self) -> tuple[str, ...]:
        """The loggers to run ("none" dropped)."""
        return tuple(name for name in self.loggers if name != "none")
