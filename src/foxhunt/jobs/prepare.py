"""Stage 1 of a train job: the bars read and split, the scalers fitted (or a resumed run's
read back), and the model config completed from the data."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from foxhunt.data import PreparedData, prepare_data
from foxhunt.data.planted.files import read_record
from foxhunt.data.preprocess import ROLLING_BASE
from foxhunt.data.shared_store import Ranks
from foxhunt.errors import ConfigError
from foxhunt.jobs.base import BaseChoice, choose_base
from foxhunt.jobs.fallback import HeadFallback, prepare_fallback
from foxhunt.jobs.options import JobSetting
from foxhunt.jobs.resume import load_saved_preprocessor, recorded_threads, trained_base
from foxhunt.model.config import DATA_FIELDS, TFTConfig
from foxhunt.model.size import check_step_fits_in_memory
from foxhunt.runs import CONFIG_FILE, RunConfig
from foxhunt.scoring import fit_run_baselines
from foxhunt.training.config import resolve_device
from foxhunt.training.distributed import DistributedContext, broadcast_from_main, gather_objects
from foxhunt.training.guards import check_early_stopping
from foxhunt.training.precision import autocast_dtype
from foxhunt.training.threads import apply_threads


@dataclass(frozen=True, kw_only=True)
class PreparedRun:
    """The run's config with the model's data fields filled (`fit_model_config`), and its
    data: train, validation and test windows and the fitted preprocessor, scaled by the
    base volatility `base` chose (None: the rolling base, set explicitly)."""

    config: RunConfig
    data: PreparedData
    base: BaseChoice | None = None
    fallback: HeadFallback | None = None  # the best other base's head (jobs/fallback.py)


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


def with_threads(config: RunConfig, resumed: Path | None) -> RunConfig:
    """`config` with the thread count this process now runs at (`apply_threads`, before the
    data's torch ops), which config.json then records; a resumed run (`resumed`, its folder)
    given no count keeps the one it recorded."""
    requested: int | str | None = config.training.threads
    why = None
    if requested is None and resumed is not None:
        requested = recorded_threads(resumed)
        if isinstance(requested, int) and requested > 0:
            why = f"recorded in {resumed / CONFIG_FILE}; --threads N to change"
    threads = apply_threads(requested, why=why).threads
    return replace(config, training=replace(config.training, threads=threads))


def store_ranks(ctx: DistributedContext) -> Ranks | None:
    """The process group's collectives, with which DDP ranks share a new feature store
    entry's symbols (data/shared_store.py); None on one process."""
    if not ctx.enabled:
        return None
    return Ranks(ctx.rank, ctx.world_size, broadcast=broadcast_from_main, gather=gather_objects)


def prepare(config: RunConfig, job: JobSetting) -> PreparedRun:
    """Checks what would fail late (device, precision, a step too large for memory, early
    stopping without validation) before anything is written; seeds torch."""
    ctx = job.distributed
    device = resolve_device(config.training.device, ctx.local_rank if ctx.world_size > 1 else None)
    autocast_dtype(config.training.precision, device)  # refused here, before anything is written
    resume = job.options.resume
    config = with_threads(config, job.output_dir if resume else None)
    torch.manual_seed(config.training.seed)
    saved = load_saved_preprocessor(job.output_dir) if resume else None
    # the windows come with the rolling base; a saved run's own base is refitted and stands
    rolling = None if saved is None else replace(saved, base=ROLLING_BASE, base_filter=None)
    read_record(config.data.path)  # a damaged planted record: refused before training
    data = prepare_data(config.data, preprocessor=rolling, ranks=store_ranks(ctx))
    resumed = None if saved is None else trained_base(job.output_dir, saved.base)
    fallback = uses_fallback(config, job)
    data, base = choose_base(config, data, resumed=resumed, keep_encoded=fallback)
    config = replace(config, model=fit_model_config(config.model, data))
    head = None
    if fallback:
        base = base or BaseChoice(
            name=ROLLING_BASE,
            setting=config.data.base,
            losses={},
            baselines=fit_run_baselines(
                data, config.model.quantiles, window=config.data.baseline_window
            ),
        )
        assert base.baselines is not None
        means, head = prepare_fallback(config, data, base.baselines, base.name)
        base = replace(base, head_losses=means)
        data = replace(data, encoded=None)  # the windows hold what training needs
    # before a 10**7 hidden size or a 10**5 lookback allocates anything
    check_step_fits_in_memory(
        config.model, config.training.batch_size, model_class=config.model_class
    )
    check_early_stopping(config.training, data)
    return PreparedRun(config=config, data=data, base=base, fallback=head)


def uses_fallback(config: RunConfig, job: JobSetting) -> bool:
    """Does this run prepare a head fallback (`TrainingConfig.head_fallback`)? Only the
    main rank serves one, and a QAT run has no initial weights to fall back to."""
    training = config.training
    return (
        training.head_fallback
        and training.validate_initial
        and config.model.output == "baseline"
        and job.is_main
        and job.options.qat is None
    )
