"""Stage 5 of a train job (main rank): the weights, config and preprocessor saved, and
metrics.json with what the training did."""

from __future__ import annotations

from typing import Any

from foxhunt.jobs.build import BuiltRun
from foxhunt.jobs.fit import Fitted
from foxhunt.jobs.options import JobResult, JobSetting
from foxhunt.runs import save_metrics, save_run
from foxhunt.scoring import Scored
from foxhunt.task import bp_per_unit, results_table


def training_record(built: BuiltRun, fitted: Fitted, seconds: float) -> dict[str, Any]:
    """metrics.json's `training` block."""
    state, scale = fitted.state, bp_per_unit(built.data.preprocessor)
    return {
        "epochs_run": state.epoch,
        "best_epoch": state.best_epoch + 1,
        "best_val_loss": state.best_val_loss,
        "best_val_loss_bp": state.best_val_loss * scale,
        "initial_val_loss": state.initial_val_loss,
        # no trained epoch replaced the initial weights (training/selection.py): the model
        # forecasts with its calibrated volatility head, the network as it was initialized
        # or a fallback head replaced the kept model (jobs/fallback.py): the network as
        # initialized again, under another base's head
        "kept_initial": (built.config.training.validate_initial and state.best_epoch == -1)
        or fitted.served_head is not None,
        "served_head": fitted.served_head,
        "steps": state.global_step,
        "skipped_steps": state.skipped_steps,
        "stopped_early": state.stopped_early,
        "parameters": built.parameters,
        "seconds": round(seconds, 2),
        "device": str(fitted.trainer.device),
    }


def save(
    built: BuiltRun, fitted: Fitted, scored: Scored, job: JobSetting, *, seconds: float
) -> JobResult:
    """`seconds`: the job's time so far, recorded in metrics.json."""
    metrics = {**scored.metrics, "training": training_record(built, fitted, seconds)}
    table = results_table(metrics, scored.quantiles)  # now with the gate's verdict
    data, output_dir = built.data, job.output_dir
    save_run(output_dir, model=built.model, config=built.config, preprocessor=data.preprocessor)
    save_metrics(output_dir, metrics)
    return JobResult(
        output_dir,
        metrics,
        table,
        model=built.model,
        model_config=built.config.model,
        data=data,
    )
