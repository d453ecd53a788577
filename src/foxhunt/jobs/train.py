"""The main job: bars in, a trained TFT, test metrics against baselines out.

`train` composes the named stages, each a function with a typed input and output:

    prepare (PreparedRun) -> build (BuiltRun) -> start_run_folder -> fit (Fitted)
        -> score_test (Scored) -> save (JobResult)

`jobs/prepare.py` reads the bars and completes the model config from them; `jobs/build.py`
builds and transforms the model and writes the run's config; `jobs/fit.py` calibrates,
trains (resuming, planning memory: `MemoryBudget`) and checkpoints; `jobs/score.py` fits the
baselines and scores the test windows through `foxhunt.scoring`, the path `evaluate` and the
backtest share; `jobs/save.py` writes the weights and metrics.json.
"""

from __future__ import annotations

import time
from pathlib import Path

from foxhunt.jobs.build import ModelTransform, build, start_run_folder
from foxhunt.jobs.fit import MemoryBudget, fit
from foxhunt.jobs.options import JobOptions, JobResult, JobSetting
from foxhunt.jobs.prepare import fit_model_config, prepare
from foxhunt.jobs.save import save
from foxhunt.jobs.score import score_test
from foxhunt.runs import RunConfig
from foxhunt.training.distributed import DistributedContext

# JobOptions, JobResult and fit_model_config stay importable from here for the callers
__all__ = ["JobOptions", "JobResult", "JobSetting", "fit_model_config", "train"]


def train(
    config: RunConfig,
    output_dir: Path,
    *,
    options: JobOptions | None = None,
    model_transforms: tuple[ModelTransform, ...] = (),
    distributed: DistributedContext | None = None,
) -> JobResult:
    """Prepare data, fit (or resume), evaluate on the test split and save the run folder.

    Under DDP (`distributed` from `init_distributed`) every rank runs this; rank 0 alone
    writes the run folder, history and checkpoints and scores the test split, and the
    others return a result with empty metrics once training ends.
    """
    job = JobSetting(
        output_dir=output_dir,
        options=options or JobOptions(),
        distributed=distributed or DistributedContext(),
    )
    started = time.perf_counter()
    built = build(prepare(config, job), job, model_transforms)
    start_run_folder(built, job)
    fitted = fit(built, job, MemoryBudget.of(job))
    if not job.is_main:
        return JobResult(output_dir, {}, "")
    scored = score_test(built, fitted, job)
    return save(built, fitted, scored, job, seconds=time.perf_counter() - started)
