"""`foxhunt diagnose`: the train job's prepare and build stages, then the checks of a network
that does not learn, each on a freshly built model: the overfit check (training/overfit.py)
and the learning-rate range test (training/lr_range.py); diagnose.json and a short table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from foxhunt.jobs.build import BuiltRun, build
from foxhunt.jobs.options import JobSetting
from foxhunt.jobs.prepare import PreparedRun, prepare
from foxhunt.runs import RunConfig
from foxhunt.storage.atomic import atomic_write_json
from foxhunt.training.calibrate import calibrate_baseline
from foxhunt.training.diagnose_config import DiagnoseConfig
from foxhunt.training.lr_range import MIN_DROP, LRRange, lr_range_test
from foxhunt.training.overfit import OverfitResult, overfit_check

DIAGNOSE_FILE = "diagnose.json"


@dataclass(frozen=True)
class Diagnosis:
    """Both checks' results and the learning rate the run's config trains at."""

    overfit: OverfitResult
    lr_range: LRRange
    training_lr: float

    def to_dict(self) -> dict[str, Any]:
        return strict(
            {
                "overfit": self.overfit.to_dict(),
                "lr_range": self.lr_range.to_dict(),
                "training_lr": self.training_lr,
            }
        )


def strict(tree: Any) -> Any:
    """`tree` with NaN and infinities as None: diagnose.json is strict JSON."""
    if isinstance(tree, dict):
        return {key: strict(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return [strict(value) for value in tree]
    if isinstance(tree, float) and not math.isfinite(tree):
        return None
    return tree


def diagnose(config: RunConfig, settings: DiagnoseConfig, output_dir: Path) -> Diagnosis:
    """Both checks on the bars and model `config` names; diagnose.json in `output_dir`."""
    job = JobSetting(output_dir=output_dir)  # prepare and build write nothing there
    diagnosis = run_checks(prepare(config, job), settings, job)
    output_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(output_dir / DIAGNOSE_FILE, diagnosis.to_dict())
    return diagnosis


def run_checks(prepared: PreparedRun, settings: DiagnoseConfig, job: JobSetting) -> Diagnosis:
    """The overfit check, then the range test, each on a model built afresh."""
    return Diagnosis(
        overfit=_overfit(prepared, job, settings),
        lr_range=_lr_range(prepared, job, settings),
        training_lr=prepared.config.training.lr,
    )


def _fresh(prepared: PreparedRun, job: JobSetting) -> BuiltRun:
    """The model as the train job builds it, from the run's seed: each check starts alike."""
    torch.manual_seed(prepared.config.training.seed)
    return build(prepared, job)


def _overfit(prepared: PreparedRun, job: JobSetting, settings: DiagnoseConfig) -> OverfitResult:
    config = prepared.config
    no_dropout = replace(config, model=replace(config.model, dropout=0.0))
    built = _fresh(replace(prepared, config=no_dropout), job)
    return overfit_check(
        built.model,
        prepared.data.train,
        config.training,
        config.model.quantiles,
        windows=settings.overfit_windows,
        steps=settings.overfit_steps,
        threshold=settings.overfit_ratio,
        lr=settings.overfit_lr,
    )


def _lr_range(prepared: PreparedRun, job: JobSetting, settings: DiagnoseConfig) -> LRRange:
    built, training, data = _fresh(prepared, job), prepared.config.training, prepared.data
    quantiles = prepared.config.model.quantiles
    if training.calibrate:  # the start the train job gives the network
        calibrate_baseline(
            built.model,
            data.train,
            quantiles,
            loss_weighting=training.loss_weighting,
            validation=data.validation,
        )
    return lr_range_test(
        built.model,
        data.train,
        training,
        quantiles,
        start=settings.lr_range_start,
        end=settings.lr_range_end,
        steps=settings.lr_range_steps,
    )


def summary(diagnosis: Diagnosis) -> str:
    """The table `foxhunt diagnose` prints."""
    fit, rng = diagnosis.overfit, diagnosis.lr_range
    hint = not fit.passed and fit.still_falling
    lines = [
        f"overfit check: {fit.windows} training windows, {fit.steps} steps at lr {fit.lr:.1e} "
        "(one batch, no dropout, no weight decay)",
        f"  head loss {fit.head_loss:.5f} -> train loss {fit.final_loss:.5f}: ratio "
        f"{fit.ratio:.3f} (pass at <= {fit.threshold:g}): {fit.verdict}"
        + (" (still falling: more --overfit-steps or a higher --overfit-lr)" if hint else "")
        + (
            " (every target is 0 on those windows: are the bars flat?)"
            if fit.head_loss == 0
            else ""
        ),
        f"lr range test: {len(rng.lrs)} steps from lr {rng.lrs[0] if rng.lrs else math.nan:.1e}, "
        f"ended: {rng.stopped}"
        + (f" after lr {rng.lr_diverged:.1e}" if math.isfinite(rng.lr_diverged) else ""),
        f"  the loss fell {rng.drop:.1%} at most, lowest at lr {rng.lr_at_min:.1e} (steepest "
        f"descent at {rng.lr_steepest:.1e}); suggested lr "
        + (
            f"{rng.suggested:.1e}"
            if math.isfinite(rng.suggested)
            else f"none (no rate lowered the loss by {MIN_DROP:.0%})"
        )
        + f"; the config's lr {diagnosis.training_lr:.1e}",
        "",
        f"{'module (overfit run, mean per step)':<38}{'grad norm':>12}{'update ratio':>14}",
    ]
    record = fit.diagnostics
    for module in [k.removeprefix("grad_norm/") for k in record if k.startswith("grad_norm/")]:
        ratio = record.get(f"update_ratio/{module}", math.nan)
        lines.append(f"{module:<38}{record[f'grad_norm/{module}']:>12.2e}{ratio:>14.2e}")
    shares = [
        f"{name} {record[f'vsn_entropy_share/{name}']:.2f}"
        for name in ("static", "past", "future")
        if f"vsn_entropy_share/{name}" in record
    ]
    if shares:
        lines.append("selection entropy / log(inputs) at the end: " + ", ".join(shares))
    return "\n".join(lines)
