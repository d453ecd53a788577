"""What a train job is given beyond its config, and what it hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch import nn

from foxhunt.data import PreparedData
from foxhunt.model.config import TFTConfig
from foxhunt.quant import QATConfig
from foxhunt.training.distributed import DistributedContext
from foxhunt.training.run_options import RunOptions


@dataclass(frozen=True, kw_only=True)
class JobOptions(RunOptions):
    """How the job runs, beyond what defines the run (not saved in config.json): the
    checkpoint and memory settings of `RunOptions`, and what the caller decides."""

    resume: bool = False
    qat: QATConfig | None = None  # quantization-aware training (foxhunt.quant); None = FP32
    memory_budget: float | str | None = None  # bytes or "auto" (memory/oom.py); None = no plan
    identity: dict[str, Any] | None = None  # identity.py: checkpoints belong to this run
    #: the caller's training callbacks (training/callbacks.py: loggers, trackers), on the main
    #: rank after the job's own and before the checkpointer, which thus saves their state
    callbacks: tuple[Any, ...] = ()


@dataclass(frozen=True, kw_only=True)
class JobSetting:
    """Where a job writes and how it runs: every stage's common input.

    output_dir: the run folder (the main rank alone writes it).
    options: the caller's `JobOptions`.
    distributed: this process among the DDP ranks (a single process by default).
    """

    output_dir: Path
    options: JobOptions = field(default_factory=JobOptions)
    distributed: DistributedContext = field(default_factory=DistributedContext)

    @property
    def is_main(self) -> bool:
        return self.distributed.is_main


@dataclass(frozen=True)
class JobResult:
    run_dir: Path
    metrics: dict[str, Any]
    table: str
    #: main rank only: the trained model (best weights), its config and the data it was
    #: read from, handed on so the report neither reloads the weights nor reads the bars again
    model: nn.Module | None = None
    model_config: TFTConfig | None = None
    data: PreparedData | None = None
