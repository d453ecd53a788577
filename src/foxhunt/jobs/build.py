"""Stage 2 of a train job: the model built from the completed config, its transforms applied
(checkpointing, QAT, then the caller's), and the run folder started with its config."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from torch import Tensor, nn

from foxhunt.data import PreparedData
from foxhunt.jobs.base import BaseChoice
from foxhunt.jobs.fallback import HeadFallback
from foxhunt.jobs.options import JobSetting
from foxhunt.jobs.prepare import PreparedRun
from foxhunt.jobs.resume import check_checkpoint_config, check_resumable_config
from foxhunt.model.factory import build_model
from foxhunt.quant import QATConfig
from foxhunt.runs import RunConfig, clear_history, save_run_config, write_identity
from foxhunt.trained_run import run_qat_config, save_qat_config
from foxhunt.transforms import apply_model_transforms, checkpointed_segments

log = logging.getLogger("foxhunt.train")

ModelTransform = Callable[[nn.Module], Any]


@dataclass(frozen=True, kw_only=True)
class BuiltRun:
    """The model, transformed, with the config it is trained under (QAT takes the initial
    weights out of the best-epoch candidates) and the data it trains on.

    qat: the QAT config in force (a resumed run's own), None for FP32.
    checkpointed: the segments activation checkpointing wraps.
    parameters: the number of weights (before DDP wraps the model).
    """

    config: RunConfig
    data: PreparedData
    model: nn.Module
    qat: QATConfig | None
    checkpointed: list[str]
    parameters: int
    base: BaseChoice | None = None  # the prepare stage's choice of base volatility
    fallback: HeadFallback | None = None  # the best other base's head (jobs/fallback.py)
    #: the model's weights as built (its network's correction zero), which a served
    #: fallback head restores; None without a fallback
    initial: dict[str, Tensor] | None = None


def build(
    prepared: PreparedRun, job: JobSetting, model_transforms: tuple[ModelTransform, ...] = ()
) -> BuiltRun:
    config = prepared.config
    model = build_model(config.model_class, config.model)
    qat = run_qat_config(job.output_dir, job.options.qat, resume=job.options.resume)
    if qat is not None and config.training.validate_initial:
        # untrained QAT weights have observed no activation: no export could be made of them
        log.info("QAT: the untrained weights are not a candidate for the best epoch")
        config = replace(config, training=replace(config.training, validate_initial=False))
    apply_model_transforms(model, config.model, qat=qat)  # checkpointing, QAT; DDP wraps last
    for transform in model_transforms:
        transform(model)
    params, inputs = sum(p.numel() for p in model.parameters()), config.model.inputs
    log.info(
        "model: %d parameters; %d static, %d past, %d future inputs; lookback %d, horizon %d",
        params,
        inputs.num_static + len(inputs.static_cardinalities),
        inputs.num_past,
        inputs.num_future,
        inputs.lookback,
        inputs.horizon,
    )
    return BuiltRun(
        config=config,
        data=prepared.data,
        model=model,
        qat=qat,
        checkpointed=checkpointed_segments(model),
        parameters=params,
        base=prepared.base,
        fallback=prepared.fallback,
        initial=None if prepared.fallback is None else _snapshot(model),
    )


def _snapshot(model: nn.Module) -> dict[str, Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def start_run_folder(built: BuiltRun, job: JobSetting) -> None:
    """config.json, preprocessor.json, identity.json and the QAT marker, written before
    training (main rank); a new run's history starts empty, a resumed one appends. A resume
    whose config the checkpoint refuses is refused here, before config.json is rewritten."""
    if job.options.resume:
        check_resumable_config(job.output_dir, built.config)
        check_checkpoint_config(job.output_dir, job.options, built.config)
    if not job.is_main:
        return
    output_dir = job.output_dir
    if not job.options.resume:
        clear_history(output_dir)
    save_run_config(output_dir, built.config, built.data.preprocessor)
    if job.options.identity is not None:
        write_identity(output_dir, job.options.identity)
    save_qat_config(output_dir, built.qat)  # marks a QAT run: load_run re-applies prepare_qat
