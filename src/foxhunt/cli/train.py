"""`foxhunt train`: fit a TFT on bars and report test metrics against baselines."""

from __future__ import annotations

import argparse
import logging
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from foxhunt.cli.resolve import dump, resolve
from foxhunt.errors import ConfigError

if TYPE_CHECKING:
    from foxhunt.runs import Mode, RunConfig
    from foxhunt.training.distributed import DistributedContext

log = logging.getLogger("foxhunt.train")


def register(sub: Any) -> None:
    # the arguments are generated (cli/train_config.py) and parsed by jsonargparse in `run`:
    # argparse hands the rest of the command line (--help too) to it as `argv`
    p = sub.add_parser("train", help="train a TFT and print test metrics", add_help=False)
    p.set_defaults(run=run, generated=True)


def parse(argv: list[str]) -> tuple[Any, Any, bool]:
    """(parser, resolved config namespace, --print-config?) of `foxhunt train ARGV`."""
    from foxhunt.cli.train_config import train_command  # the configs: not for `foxhunt --help`

    return resolve(train_command(), argv)


def output_dir(args: Any) -> Path:
    if args.resume is not None:
        if args.output_dir is not None and args.output_dir != args.resume:
            raise ConfigError("--resume DIR continues the run in DIR; drop --output-dir")
        return Path(args.resume)
    if args.resume_from is not None:
        raise ConfigError("--resume-from STEP needs --resume DIR (the run to continue)")
    return args.output_dir or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")


def folder_mode(args: Any) -> Mode:
    if args.resume is not None:
        return "resume"
    return "replace" if args.overwrite else "new"


def check_world_size(config: RunConfig, ctx: DistributedContext) -> None:
    if config.training.batch_size % ctx.world_size:
        raise ConfigError(
            f"--batch-size {config.training.batch_size} is the global batch and must divide "
            f"evenly among the {ctx.world_size} processes; use a multiple of {ctx.world_size}"
        )


def run(parsed: argparse.Namespace) -> int:
    parser, cfg, show = parse(parsed.argv)
    if show:
        print(dump(parser, cfg), end="")
        return 0
    # imported once the line is parsed: `foxhunt train --help` needs no torch (nor the rest)
    from foxhunt.cli.train_config import qat_config, run_config, tracking_config
    from foxhunt.data.sources import source_files
    from foxhunt.jobs.train import JobOptions, train
    from foxhunt.memory.oom import parse_budget
    from foxhunt.report import write_report
    from foxhunt.runs import RunFolder, check_output_path
    from foxhunt.tracking import build_tracker, check_installed
    from foxhunt.training.distributed import (
        distributed_session,
        main_decides,
        quiet_other_ranks,
    )

    config, args, data_file = run_config(cfg), cfg.options, cfg.data.path
    tracking = tracking_config(cfg)
    # a logger's missing package: one line, before anything is written or trained
    check_installed(tracking.active, tracking.tracking_uri)
    budget = parse_budget(args.memory_budget) if args.memory_budget is not None else None
    if data_file is not None:  # before any folder is locked, created or replaced
        source_files(data_file)  # a file, or a folder or glob holding some
    storage = args.checkpoint_storage
    if storage is not None and ("://" not in storage or storage.startswith("file://")):
        check_output_path(Path(storage.removeprefix("file://")), "--checkpoint-storage")
    with (
        distributed_session(config.training.device, args.dist_timeout) as ctx,
        ExitStack() as stack,
    ):
        quiet_other_ranks(ctx)
        check_world_size(config, ctx)
        claimed: list[RunFolder] = []

        def claim() -> tuple[Path, dict[str, Any]]:
            # rank 0 locks the folder (and with --overwrite, stages the new run beside it)
            folder = stack.enter_context(RunFolder(output_dir(args), mode=folder_mode(args)))
            claimed.append(folder)
            where = SimpleNamespace(resume=args.resume, data_file=data_file)
            return folder.workdir, run_identity(folder.workdir, config, where)

        workdir, identity = main_decides(ctx, claim)
        days = config.data.synthetic_days
        source = data_file or f"built-in synthetic ES bars ({days} days)"
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
            qat=qat_config(cfg),
            memory_budget=budget,
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
        report = write_report(final, job=result) if args.report else None
        if report is not None:
            print(f"report: {report}")  # written from the job's model and data
        if tracker is not None:
            tracker.finish(final, report)
    return 0


def run_identity(workdir: Path, config: RunConfig, args: Any) -> dict[str, Any]:
    """The run's identity: read back from identity.json (and the data checked) on --resume,
    else new."""
    from foxhunt.runs import check_same_data, new_identity, read_identity

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
