"""`foxhunt train`'s flags -> the run's config (data, model, training), validated by the
config dataclasses themselves; `foxhunt backtest` reads the same flags."""

from __future__ import annotations

import argparse

from foxhunt.data import DataConfig
from foxhunt.model.config import TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.tracking import TrackingConfig
from foxhunt.training.config import TrainingConfig


def checkpointing_mode(args: argparse.Namespace) -> str | tuple[str, ...]:
    if args.checkpoint_segments:
        return tuple(args.checkpoint_segments)
    return "full" if args.use_gradient_checkpointing else "none"


def tracking_config_from_args(args: argparse.Namespace) -> TrackingConfig:
    return TrackingConfig(
        loggers=tuple(args.logger or ()),
        tracking_dir=args.tracking_dir,
        tracking_uri=args.tracking_uri,
        experiment=args.experiment,
        log_every=args.log_every,
    )


def run_config_from_args(args: argparse.Namespace) -> RunConfig:
    max_gap = None if str(args.max_gap).lower() == "none" else args.max_gap
    contracts = None if str(args.contract_column).lower() == "none" else args.contract_column
    data = DataConfig(
        path=args.data_file,
        start=args.start,
        end=args.end,
        symbols=args.symbols,
        contract_column=contracts,
        roll_adjust=args.roll_adjust,
        timezone=args.timezone,
        timestamp_column=args.timestamp_column,
        lookback=args.lookback,
        horizon=args.horizon,
        max_gap=max_gap,
        calendar=args.calendar,
        cross_breaks=args.cross_breaks,
        val_fraction=args.val_fraction,
        test_fraction=args.test_fraction,
        observed_columns=args.observed_columns,
        known_columns=args.known_columns,
        synthetic_days=args.synthetic_days,
        synthetic_seed=args.seed,
        baseline_window=args.baseline_window,
        fast_window=args.fast_window,
    )
    model = TFTConfig(
        num_static=0,  # the data decides num_*: placeholders until fit_model_config
        num_past=1,
        num_future=0,
        lookback=args.lookback,
        horizon=args.horizon,
        hidden_size=args.hidden_size,
        variable_hidden_size=args.variable_hidden_size,
        attention_heads=args.attention_heads,
        dropout=args.dropout,
        quantiles=args.quantiles,
        checkpointing=checkpointing_mode(args),
        output=args.output,
        learn_spread=args.learn_spread,
    )
    training = TrainingConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        weight_decay=args.weight_decay,
        grad_clip=args.grad_clip,
        patience=args.patience,
        seed=args.seed,
        device=args.device,
        precision=args.precision,
        max_steps_per_epoch=args.max_steps_per_epoch,
        num_workers=args.num_workers,
        loss_weighting=args.loss_weighting,
        validate_initial=args.validate_initial,
        calibrate=args.calibrate,
        initial_confidence=args.initial_confidence,
        lr_schedule=args.lr_schedule,
        warmup_steps=args.warmup_steps,
        warmup_fraction=args.warmup_fraction,
        min_lr=args.min_lr,
    )
    return RunConfig(data=data, model=model, training=training)
