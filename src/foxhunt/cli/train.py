"""`foxhunt train`: fit a TFT on bars and report test metrics against baselines."""

from __future__ import annotations

import argparse
import logging
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any

from foxhunt.cli.common import add_data_file_arguments, csv_tuple, float_tuple
from foxhunt.cli.train_config import run_config_from_args, tracking_config_from_args
from foxhunt.data.sources import source_files
from foxhunt.errors import ConfigError
from foxhunt.jobs.train import JobOptions, train
from foxhunt.memory.oom import parse_budget
from foxhunt.quant import QATConfig
from foxhunt.report import write_report
from foxhunt.runs import (
    Mode,
    RunConfig,
    RunFolder,
    check_output_path,
    check_same_data,
    new_identity,
    read_identity,
)
from foxhunt.tracking import LOGGERS, build_tracker, check_installed
from foxhunt.training.distributed import (
    DEFAULT_TIMEOUT_S,
    DistributedContext,
    distributed_session,
    main_decides,
    quiet_other_ranks,
)

log = logging.getLogger("foxhunt.train")


def register(sub: Any) -> None:
    p = sub.add_parser("train", help="train a TFT and print test metrics")
    add_data_file_arguments(p, required=False)
    d = p.add_argument_group("data")
    d.add_argument("--lookback", type=int, default=64, help="bars of history per window")
    d.add_argument("--horizon", type=int, default=8, help="bars to forecast")
    d.add_argument(
        "--max-gap",
        default="auto",
        help='largest time between bars inside a window ("10min"); "auto" = 1.5x the bar '
        'spacing; "none" lets windows straddle session gaps',
    )
    d.add_argument(
        "--calendar",
        default="auto",
        help='exchange calendar (docs/calendars.md): "auto" infers it from the symbol column '
        '(ES, NQ, RTY, YM and micros -> "CME Globex Equity"), "none", or a '
        "pandas_market_calendars name; saved with the run for predict and evaluate",
    )
    d.add_argument(
        "--cross-breaks",
        action="store_true",
        help="let windows cross the calendar's scheduled closures (daily break, weekends, "
        "holidays): gaps are measured in trading time, so only missing bars split windows",
    )
    d.add_argument("--val-fraction", type=float, default=0.15)
    d.add_argument("--test-fraction", type=float, default=0.15)
    d.add_argument("--observed-columns", type=csv_tuple, default=(), help="extra past inputs")
    d.add_argument("--known-columns", type=csv_tuple, default=(), help="extra known inputs")
    d.add_argument(
        "--contract-column",
        default="auto",
        help="column naming each bar's contract or expiry: each contract its own series; "
        '"auto" = a column called contract or expiry; "none" = ignore (docs/data.md)',
    )
    d.add_argument(
        "--roll-adjust",
        default=None,
        choices=["ratio", "difference"],
        help="one back-adjusted series per symbol, rolling on the volume crossover, instead "
        "of per-contract segments",
    )
    d.add_argument(
        "--synthetic-days", type=int, default=60, help="days of built-in data without a file"
    )
    m = p.add_argument_group("model")
    m.add_argument("--hidden-size", type=int, default=32)
    m.add_argument("--variable-hidden-size", type=int, default=8)
    m.add_argument("--attention-heads", type=int, default=4)
    m.add_argument("--dropout", type=float, default=0.1)
    m.add_argument("--quantiles", type=float_tuple, default=(0.1, 0.5, 0.9))
    m.add_argument(
        "--output",
        default="baseline",
        choices=["direct", "baseline"],
        help="direct: the head predicts the quantiles; baseline: a correction to a rolling "
        "volatility baseline's Gaussian quantiles, which the untrained model forecasts exactly",
    )
    m.add_argument(
        "--learn-spread",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --output baseline (default there): learn a factor per horizon step and "
        "quantile on z_q",
    )
    m.add_argument(
        "--baseline-window",
        type=int,
        default=64,
        help="bars of the rolling volatility behind the baseline scale",
    )
    m.add_argument(
        "--fast-window",
        type=int,
        default=16,
        help="bars of a faster rolling volatility the baseline output learns to lean on (0 = none)",
    )
    m.add_argument(
        "--use-gradient-checkpointing",
        action="store_true",
        help="recompute every segment's activations in backward (less memory, ~1.3x time)",
    )
    m.add_argument(
        "--checkpoint-segments", type=csv_tuple, default=None, help="checkpoint only these"
    )
    q = p.add_argument_group("quantization (see docs/QAT_GUIDE.md)")
    q.add_argument("--qat", action="store_true", help="quantization-aware training (int8)")
    q.add_argument(
        "--qat-freeze-after",
        type=int,
        default=QATConfig().freeze_after,
        metavar="N",
        help="training steps of observer warm-up; then scales are frozen (default: %(default)s)",
    )
    t = p.add_argument_group("training")
    t.add_argument("--epochs", type=int, default=5)
    t.add_argument(
        "--batch-size",
        type=int,
        default=64,
        help="windows per optimizer step; under torchrun the global batch, split across ranks",
    )
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--weight-decay", type=float, default=1e-4)
    t.add_argument("--grad-clip", type=float, default=1.0)
    t.add_argument("--patience", type=int, default=3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    t.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    t.add_argument("--max-steps-per-epoch", type=int, default=None)
    t.add_argument("--num-workers", type=int, default=0)
    t.add_argument(
        "--loss-weighting",
        default="none",
        choices=["none", "inverse_scale"],
        help="inverse_scale: divide each window's loss by its baseline scale",
    )
    t.add_argument(
        "--validate-initial",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="score validation before the first epoch; the initial weights (with --output "
        "baseline: the baseline) may stay the best",
    )
    t.add_argument(
        "--initial-confidence",
        type=float,
        default=0.95,
        help="a trained epoch replaces the initial weights only if a day-block bootstrap on "
        "validation is this sure it is better (0 = any improvement)",
    )
    t.add_argument(
        "--calibrate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --output baseline: fit the output's volatility weight (and spread) on the "
        "training windows before the first epoch",
    )
    t.add_argument(
        "--lr-schedule",
        default="constant",
        choices=["constant", "cosine", "onecycle"],
        help="cosine: linear warm-up, then cosine decay to --min-lr; onecycle: torch's OneCycleLR",
    )
    t.add_argument("--warmup-steps", type=int, default=None, help="default: --warmup-fraction")
    t.add_argument("--warmup-fraction", type=float, default=0.05, help="of all planned steps")
    t.add_argument("--min-lr", type=float, default=0.0, help="where the schedule ends")
    r = p.add_argument_group("run folder, checkpoints and memory")
    r.add_argument(
        "--output-dir", type=Path, default=None, help="run folder (default: runs/<date-time>)"
    )
    r.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="DIR",
        help="continue the run in DIR exactly where its last checkpoint left off",
    )
    r.add_argument(
        "--resume-from",
        type=int,
        default=None,
        metavar="STEP",
        help="with --resume: continue from the checkpoint of optimizer step STEP (default: last)",
    )
    r.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run in the folder (the new run is written beside it and swapped in "
        "once complete)",
    )
    r.add_argument(
        "--checkpoint-every", type=int, default=None, help="also checkpoint every N steps"
    )
    r.add_argument("--keep-checkpoints", type=int, default=2, help="keep the last K (+ the best)")
    r.add_argument(
        "--checkpoint-storage", default=None, help="folder or fsspec URL (s3://...) for checkpoints"
    )
    r.add_argument("--memory-log-every", type=int, default=100, help="memory debug line every N")
    r.add_argument("--leak-threshold-mb", type=float, default=500.0)
    r.add_argument(
        "--memory-budget",
        type=parse_budget,
        default=None,
        metavar="SIZE",
        help="fit training in SIZE (512MB, 4GB, 4GiB) or auto (CUDA free memory): plans "
        "checkpointing and micro-batches from one probing step (docs/memory-budget.md)",
    )
    r.add_argument("--no-report", action="store_true", help="skip the HTML report at the end")
    k = p.add_argument_group("tracking (see docs/tracking.md)")
    k.add_argument(
        "--logger",
        action="append",
        choices=LOGGERS,
        default=None,
        help="log to tensorboard and/or mlflow (repeat the flag for both); default none",
    )
    k.add_argument("--tracking-dir", default=None, help="TensorBoard folder (RUN/tensorboard)")
    k.add_argument("--tracking-uri", default=None, help="MLflow URI (sqlite:///RUN/../mlflow.db)")
    k.add_argument("--experiment", default="foxhunt", help="MLflow experiment name")
    k.add_argument("--log-every", type=int, default=10, help="steps between step scalars")
    g = p.add_argument_group("distributed (under torchrun; see docs/distributed.md)")
    g.add_argument(
        "--dist-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="how long a rank waits for the others before failing (a dead or hung rank)",
    )
    p.set_defaults(run=run)


def output_dir(args: argparse.Namespace) -> Path:
    if args.resume is not None:
        if args.output_dir is not None and args.output_dir != args.resume:
            raise ConfigError("--resume DIR continues the run in DIR; drop --output-dir")
        return Path(args.resume)
    if args.resume_from is not None:
        raise ConfigError("--resume-from STEP needs --resume DIR (the run to continue)")
    return args.output_dir or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")


def folder_mode(args: argparse.Namespace) -> Mode:
    if args.resume is not None:
        return "resume"
    return "replace" if args.overwrite else "new"


def check_world_size(config: RunConfig, ctx: DistributedContext) -> None:
    if config.training.batch_size % ctx.world_size:
        raise ConfigError(
            f"--batch-size {config.training.batch_size} is the global batch and must divide "
            f"evenly among the {ctx.world_size} processes; use a multiple of {ctx.world_size}"
        )


def run(args: argparse.Namespace) -> int:
    config, tracking = run_config_from_args(args), tracking_config_from_args(args)
    # a logger's missing package: one line, before anything is written or trained
    check_installed(tracking.active, tracking.tracking_uri)
    if args.data_file is not None:  # before any folder is locked, created or replaced
        source_files(args.data_file)  # a file, or a folder or glob holding some
    storage = args.checkpoint_storage
    if storage is not None and ("://" not in storage or storage.startswith("file://")):
        check_output_path(Path(storage.removeprefix("file://")), "--checkpoint-storage")
    with distributed_session(args.device, args.dist_timeout) as ctx, ExitStack() as stack:
        quiet_other_ranks(ctx)
        check_world_size(config, ctx)
        claimed: list[RunFolder] = []

        def claim() -> tuple[Path, dict[str, Any]]:
            # rank 0 locks the folder (and with --overwrite, stages the new run beside it)
            folder = stack.enter_context(RunFolder(output_dir(args), mode=folder_mode(args)))
            claimed.append(folder)
            return folder.workdir, run_identity(folder.workdir, config, args)

        workdir, identity = main_decides(ctx, claim)
        source = args.data_file or f"built-in synthetic ES bars ({args.synthetic_days} days)"
        log.info("training on %s -> %s", source, claimed[0].final if claimed else workdir)
        # the main rank's: only it logs (the job hands callbacks to its trainer alone)
        tracker = build_tracker(tracking, claimed[0].final, workdir) if ctx.is_main else None
        if tracker is not None:
            stack.callback(tracker.close)  # FAILED unless finish() ended it first
        options = JobOptions(
            resume=args.resume is not None,
            resume_from=args.resume_from,
            identity=identity,
            checkpoint_every=args.checkpoint_every,
            keep_checkpoints=args.keep_checkpoints,
            checkpoint_storage=args.checkpoint_storage,
            memory_log_every=args.memory_log_every,
            leak_threshold_mb=args.leak_threshold_mb,
            qat=QATConfig(freeze_after=args.qat_freeze_after) if args.qat else None,
            memory_budget=args.memory_budget,
            callbacks=() if tracker is None else (tracker,),
        )
        result = train(config, workdir, options=options, distributed=ctx)
        if not ctx.is_main:  # rank 0 alone prints and writes the run folder
            return 0
        if tracker is not None:  # before the commit renames the folder its files are in
            tracker.log_results(result.metrics)
        final = claimed[0].commit()  # complete: only now does it replace an earlier run
        print(result.table)
        print(f"run saved to {final} (metrics.json, model.safetensors, config.json)")
        report = None if args.no_report else write_report(final, job=result)
        if report is not None:
            print(f"report: {report}")  # written from the job's model and data
        if tracker is not None:
            tracker.finish(final, report)
    return 0


def run_identity(workdir: Path, config: RunConfig, args: argparse.Namespace) -> dict[str, Any]:
    """The run's identity: read back from identity.json (and the data checked) on --resume,
    else new."""
    identity = read_identity(workdir) if args.resume is not None else None
    if identity is not None:
        check_same_data(identity, args.data_file)
        return identity
    if args.resume is not None:  # a run saved before identities: say what is not checked
        log.warning(
            "%s has no identity.json (saved before runs had one): the bars cannot be checked "
            "against those it was trained on; resuming with %s, which later resumes are "
            "checked against",
            workdir,
            args.data_file or "the built-in synthetic bars",
        )
    return new_identity(config.to_dict(), args.data_file)  # the job writes it with config.json
