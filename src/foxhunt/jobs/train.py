"""The main job: bars in, a trained TFT, test metrics against baselines out."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from foxhunt.baselines import fit_baselines
from foxhunt.data import PreparedData, prepare_data
from foxhunt.errors import ConfigError
from foxhunt.jobs.resume import checkpoint_location, load_saved_preprocessor
from foxhunt.memory import MemoryProfiler
from foxhunt.memory.oom import REPLAN_FRACTION, budget_bytes, fit_with_oom_guard
from foxhunt.model.config import DATA_FIELDS, TFTConfig
from foxhunt.model.factory import build_model
from foxhunt.model.size import check_step_fits_in_memory
from foxhunt.quant import QATConfig
from foxhunt.quant.schedule import observers_paused
from foxhunt.runs import (
    FORECASTS_FILE,
    RunConfig,
    append_history,
    clear_history,
    save_baseline_state,
    save_metrics,
    save_run,
    save_run_config,
    versions,
    write_identity,
)
from foxhunt.storage.remote import open_storage
from foxhunt.task import (
    all_baselines,
    bp_per_unit,
    forecast_metrics,
    results_table,
    score,
)
from foxhunt.trained_run import run_qat_config, save_qat_config
from foxhunt.training.calibrate import calibrate_baseline
from foxhunt.training.checkpoint import Checkpointer, resume_point
from foxhunt.training.comparison import (
    bar_returns,
    forecast_frame,
    historical_baseline,
    vol_baselines,
    window_targets,
    write_forecasts,
)
from foxhunt.training.config import resolve_device
from foxhunt.training.distributed import (
    DistributedContext,
    barrier,
    main_decides,
    peer_failures,
)
from foxhunt.training.finite import check_finite_forecasts
from foxhunt.training.guards import check_early_stopping
from foxhunt.training.memory import plan_trainer, report_checkpointing
from foxhunt.training.precision import autocast_dtype
from foxhunt.training.trainer import Trainer
from foxhunt.transforms import apply_model_transforms, checkpointed_segments

log = logging.getLogger("foxhunt.train")


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


def fit_model_config(config: TFTConfig, data: PreparedData) -> TFTConfig:
    """The data decides how many inputs the model sees (``DATA_FIELDS``, left None by the
    caller); the user decides everything else. A given value the data contradicts is
    refused, naming the field."""
    schema = data.schema
    derived: dict[str, Any] = {
        "num_static": len(schema.static_names),
        "static_cardinalities": tuple(schema.static_cardinalities),
        "num_past": len(schema.past_names),
        "num_future": len(schema.future_names),
        "lookback": data.train.lookback,
        "horizon": data.train.horizon,
        # the signal is the data's (fast_window); only the baseline output leans on it
        "vol_signals": 1 if data.preprocessor.fast_window and config.output == "baseline" else 0,
    }
    assert set(derived) == set(DATA_FIELDS), "fit_model_config must fill every data field"
    for name, value in derived.items():
        given = getattr(config, name)
        if given is not None and given != value:
            raise ConfigError(
                f"TFTConfig.{name}={given!r} but the data gives {value!r}: leave it unset "
                "(None) to take it from the data"
            )
    return replace(config, **derived)


@dataclass(frozen=True, kw_only=True)
class JobOptions:
    """How the job runs, beyond what defines the run (not saved in config.json)."""

    resume: bool = False
    checkpoint_every: int | None = None  # optimizer steps between checkpoints; epochs always
    keep_checkpoints: int = 2
    checkpoint_storage: str | None = None  # folder or fsspec URL; default RUN_DIR/checkpoints
    memory_log_every: int = 100
    leak_threshold_mb: float = 500.0
    qat: QATConfig | None = None  # quantization-aware training (foxhunt.quant); None = FP32
    memory_budget: float | str | None = None  # bytes or "auto" (memory/oom.py); None = no plan
    resume_from: int | None = None  # optimizer step of the checkpoint to resume; None = last
    identity: dict[str, Any] | None = None  # identity.py: checkpoints belong to this run
    #: the caller's training callbacks (training/callbacks.py: loggers, trackers), on the main
    #: rank after the job's own and before the checkpointer, which thus saves their state
    callbacks: tuple[Any, ...] = ()


class HistoryWriter:
    """Appends each epoch record to history.jsonl as it happens."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def on_epoch_end(self, trainer: Trainer, record: dict[str, Any]) -> None:
        append_history(self.run_dir, {"event": "epoch", **record})


def train(
    config: RunConfig,
    output_dir: Path,
    *,
    options: JobOptions | None = None,
    model_transforms: tuple[Callable[[nn.Module], Any], ...] = (),
    distributed: DistributedContext | None = None,
) -> JobResult:
    """Prepare data, fit (or resume), evaluate on the test split and save the run folder.

    Under DDP (`distributed` from `init_distributed`) every rank runs this; rank 0 alone
    writes the run folder, history and checkpoints and scores the test split, and the
    others return a result with empty metrics once training ends.
    """
    options = options or JobOptions()
    ctx = distributed or DistributedContext()
    started = time.perf_counter()
    device = resolve_device(config.training.device, ctx.local_rank if ctx.world_size > 1 else None)
    autocast_dtype(config.training.precision, device)  # refused here, before anything is written
    torch.manual_seed(config.training.seed)
    preprocessor = load_saved_preprocessor(output_dir) if options.resume else None
    data = prepare_data(config.data, preprocessor=preprocessor)
    model_config = fit_model_config(config.model, data)
    config = replace(config, model=model_config)
    # before a 10**7 hidden size or a 10**5 lookback allocates anything
    check_step_fits_in_memory(
        model_config, config.training.batch_size, model_class=config.model_class
    )
    check_early_stopping(config.training, data)
    model = build_model(config.model_class, model_config)
    qat = run_qat_config(output_dir, options.qat, resume=options.resume)
    if qat is not None and config.training.validate_initial:
        # untrained QAT weights have observed no activation: no export could be made of them
        log.info("QAT: the untrained weights are not a candidate for the best epoch")
        config = replace(config, training=replace(config.training, validate_initial=False))
    apply_model_transforms(model, model_config, qat=qat)  # checkpointing, QAT; DDP wraps last
    for transform in model_transforms:
        transform(model)
    checkpointed = checkpointed_segments(model)
    params, inputs = sum(p.numel() for p in model.parameters()), model_config.inputs
    log.info(
        "model: %d parameters; %d static, %d past, %d future inputs; lookback %d, horizon %d",
        params,
        inputs.num_static + len(inputs.static_cardinalities),
        inputs.num_past,
        inputs.num_future,
        inputs.lookback,
        inputs.horizon,
    )
    if ctx.is_main:
        if not options.resume:
            clear_history(output_dir)
        save_run_config(output_dir, config, data.preprocessor)
        if options.identity is not None:
            write_identity(output_dir, options.identity)
        save_qat_config(output_dir, qat)  # marks a QAT run: load_run re-applies prepare_qat
    if config.training.calibrate and not options.resume:  # a resumed run restores its own
        record = calibrate_baseline(
            model,
            data.train,
            model_config.quantiles,
            loss_weighting=config.training.loss_weighting,
        )
        if record is not None and ctx.is_main:
            append_history(output_dir, record)
    storage = open_storage(checkpoint_location(output_dir, options))
    checkpointer = Checkpointer(
        storage,
        config=config.to_dict(),
        every_steps=options.checkpoint_every,
        keep_last=options.keep_checkpoints,
        metadata={"versions": versions(), "identity": options.identity},
    )
    trainer = Trainer(
        model,
        config.training,
        train_set=data.train,
        val_set=data.validation,
        quantiles=model_config.quantiles,
        rank=ctx.rank,
        world_size=ctx.world_size,
        local_rank=ctx.local_rank,
    )
    if ctx.is_main:  # the only rank that logs memory, writes history and checkpoints
        profiler = MemoryProfiler(
            trainer.device,
            log_every=options.memory_log_every,
            leak_threshold_mb=options.leak_threshold_mb,
            sink=lambda record: append_history(output_dir, record),
        )
        trainer.callbacks = [profiler, HistoryWriter(output_dir), *options.callbacks, checkpointer]
    with peer_failures(ctx):
        if options.resume:
            # every rank reads the checkpoint rank 0 names; the barrier keeps rank 0 from
            # writing (and pruning) checkpoints before every rank has finished reading
            name = main_decides(ctx, lambda: resume_point(checkpointer, options.resume_from))
            checkpointer.restore(trainer, name)
            barrier()
        if checkpointed and ctx.is_main:  # measured, not assumed: first batch, with and without
            with observers_paused(model):  # QAT: measuring must not move the observers
                append_history(output_dir, report_checkpointing(trainer, checkpointed))
        budget = options.memory_budget

        def replan(fraction: float = 1.0) -> None:
            assert budget is not None
            plan = plan_trainer(trainer, budget_bytes(budget, trainer.device, fraction))
            if ctx.is_main:
                append_history(output_dir, {"event": "memory_plan", **plan.__dict__})

        if budget is not None:
            replan()
        state = fit_with_oom_guard(
            trainer.fit,
            batch_size=config.training.batch_size,
            budget=budget,
            replan=(lambda: replan(REPLAN_FRACTION)) if budget is not None else None,
        )
    if not ctx.is_main:
        return JobResult(output_dir, {}, "")
    scale = bp_per_unit(data.preprocessor)
    historical = historical_baseline(data.train, model_config.quantiles) * scale
    # fitted on the train span, then filtered forward over validation and test
    bars = bar_returns(data.test, data.preprocessor, train_end=data.summary.validation_start)
    fitted = fit_baselines(bars, window=config.data.baseline_window)
    vol = vol_baselines(fitted, bars, data.test, model_config.quantiles)
    baseline_state = {
        "historical_quantiles": historical.tolist(),
        "volatility": fitted.state_dict(),
    }
    save_baseline_state(output_dir, baseline_state)
    pred, target = trainer.predict(data.test)
    check_finite_forecasts(pred, "test")  # a NaN model is never saved
    pred, target = pred * scale, target * scale
    metrics = score(pred, target, historical, model_config.quantiles, vol=vol)
    if len(data.validation):  # the score a trained model must beat to be kept over the baseline
        realized = vol_baselines(fitted, bars, data.validation, model_config.quantiles)
        observed = window_targets(data.validation) * scale
        metrics["validation_baselines"] = {
            "realized_vol": forecast_metrics(
                realized["realized_vol"], observed, model_config.quantiles
            )
        }
    everyone = all_baselines(historical, pred.shape, vol)
    frame = forecast_frame(data.test, pred, target, model_config.quantiles, everyone)
    write_forecasts(output_dir / FORECASTS_FILE, frame)
    metrics["training"] = {
        "epochs_run": state.epoch,
        "best_epoch": state.best_epoch + 1,
        "best_val_loss": state.best_val_loss,
        "best_val_loss_bp": state.best_val_loss * scale,
        "initial_val_loss": state.initial_val_loss,
        "steps": state.global_step,
        "skipped_steps": state.skipped_steps,
        "stopped_early": state.stopped_early,
        "parameters": params,
        "seconds": round(time.perf_counter() - started, 2),
        "device": str(trainer.device),
    }
    save_run(output_dir, model=model, config=config, preprocessor=data.preprocessor)
    save_metrics(output_dir, metrics)
    table = results_table(metrics, model_config.quantiles)
    return JobResult(output_dir, metrics, table, model=model, model_config=model_config, data=data)
