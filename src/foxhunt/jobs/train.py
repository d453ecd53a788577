"""The main job: bars in, a trained TFT, test metrics against baselines out.

`train` composes the named stages, each a function with a typed input and output:

    prepare (PreparedRun) -> build (BuiltRun) -> start_run_folder -> fit (Fitted)
        -> serve_fallback (BuiltRun, Fitted) -> score_test (Scored) -> save (JobResult)

`jobs/prepare.py` reads the bars and completes the model config from them; `jobs/build.py`
builds and transforms the model and writes the run's config; `jobs/fit.py` calibrates,
trains (resuming, planning memory: `MemoryBudget`) and checkpoints; `serve_fallback` serves
another base's calibrated head where it beats the kept model (`jobs/fallback.py`);
`jobs/score.py` fits the
baselines and scores the test windows through `foxhunt.scoring`, the path `evaluate` and the
backtest share; `jobs/save.py` writes the weights and metrics.json.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from foxhunt.jobs.build import BuiltRun, ModelTransform, build, start_run_folder
from foxhunt.jobs.fallback import fall_back
from foxhunt.jobs.fit import Fitted, MemoryBudget, fit
from foxhunt.jobs.options import JobOptions, JobResult, JobSetting
from foxhunt.jobs.prepare import fit_model_config, prepare
from foxhunt.jobs.save import save
from foxhunt.jobs.score import score_test
from foxhunt.runs import RunConfig
from foxhunt.task import window_losses
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
    built, fitted = serve_fallback(built, fitted)
    scored = score_test(built, fitted, job)
    return save(built, fitted, scored, job, seconds=time.perf_counter() - started)


def serve_fallback(built: BuiltRun, fitted: Fitted) -> tuple[BuiltRun, Fitted]:
    """The kept model scored on validation against the best other base's head (main rank);
    the run then serves whichever wins (`TrainingConfig.head_fallback`, jobs/fallback.py)."""
    fallback, initial, base = built.fallback, built.initial, built.base
    if fallback is None or initial is None or base is None:
        return built, fitted
    pred, target = fitted.trainer.predict(built.data.validation)
    served = fall_back(
        built.config,
        built.model,
        initial,
        window_losses(pred, target, built.config.model.quantiles),
        trained=fitted.state.best_epoch >= 0,
        fallback=fallback,
        base=base,
        data=built.data,
    )
    built = replace(built, data=served.data, base=served.base, fallback=None, initial=None)
    return built, replace(fitted, served_head=served.head)
