"""How a training run checkpoints, resumes and watches memory: settings of the job, not of
the run (never saved in config.json). `JobOptions` (jobs/options.py) and `foxhunt train`'s
options section (cli/train_config.py) both extend this one definition."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """Checkpoints and memory watching of a training run.

    Attributes:
        checkpoint_every: also checkpoint every N optimizer steps (epochs always checkpoint).
        keep_checkpoints: keep the last K checkpoints (+ the best).
        checkpoint_storage: folder or fsspec URL (s3://...) for checkpoints; None =
            RUN_DIR/checkpoints.
        memory_log_every: a memory debug line every N steps.
        leak_threshold_mb: growth of memory across epochs reported as a leak.
        resume_from: on resume: continue from the checkpoint of this optimizer step
            (default: the last).
        diagnostics: record, each epoch, every top-level module's gradient norm and update
            ratio and the selection networks' weight entropy, in history.jsonl and the
            loggers (training/diagnostics.py; docs/forecasting.md, "When the network does
            not learn").
    """

    checkpoint_every: int | None = None
    keep_checkpoints: int = 2
    checkpoint_storage: str | None = None
    memory_log_every: int = 100
    leak_threshold_mb: float = 500.0
    resume_from: int | None = None
    diagnostics: bool = False
