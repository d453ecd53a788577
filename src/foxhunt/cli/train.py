"""`foxhunt train`: fit a TFT on bars and report test metrics against baselines."""

from __future__ import annotations

import argparse
import logging
from contextlib import ExitStack
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from foxhunt.cli.resolve import Command, add_command, parsed
from foxhunt.errors import ConfigError

if TYPE_CHECKING:
    from foxhunt.jobs.train import JobOptions, JobResult
    from foxhunt.runs import Mode, RunConfig, RunFolder
    from foxhunt.tracking import TrackingConfig
    from foxhunt.training.distributed import DistributedContext

log = logging.getLogger("foxhunt.train")


def register(sub: Any) -> None:
    add_command(sub, "train", "train a TFT and print test metrics", run)


def command() -> Command:
    from foxhunt.cli.train_config import train_command  # the configs: not for `foxhunt --help`

    return train_command()


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


def run(line: argparse.Namespace) -> int:
    cfg = parsed(command(), line.argv)
    if cfg is None:  # --print-config printed it
        return 0
    # imported once the line is parsed: `foxhunt train --help` needs no torch (nor the rest)
    from foxhunt.cli.train_config import run_config, tracking_config
    from foxhunt.jobs.train import train
    from foxhunt.runs import RunFolder
    from foxhunt.tracking import build_tracker
    from foxhunt.training.distributed import distributed_session, main_decides, quiet_other_ranks

    config, args, data_file = run_config(cfg), cfg.options, cfg.data.path
    tracking = tracking_config(cfg)
    budget = check_before_writing(args, tracking, data_file)
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
        source = data_file or f"built-in synthetic ES bars ({config.data.synthetic_days} days)"
        log.info("training on %s -> %s", source, claimed[0].final if claimed else workdir)
        # the main rank's: only it logs (the job hands callbacks to its trainer alone)
        tracker = build_tracker(tracking, claimed[0].final, workdir) if ctx.is_main else None
        if tracker is not None:
            stack.callback(tracker.close)  # FAILED unless finish() ended it first
        options = job_options(cfg, identity, budget, tracker)
        result = train(config, workdir, options=options, distributed=ctx)
        if ctx.is_main:  # rank 0 alone prints and writes the run folder
            finish(result, claimed[0], args.report, tracker)
    return 0


def check_before_writing(args: Any, tracking: TrackingConfig, data_file: Path | None) -> Any:
    """The memory budget, once what would fail later is checked: before anything is
    written or trained, and before any folder is locked, created or replaced."""
    from foxhunt.data.sources import source_files
    from foxhunt.memory.oom import parse_budget
    from foxhunt.runs import check_output_path
    from foxhunt.tracking import check_installed

    check_installed(tracking.active, tracking.tracking_uri)  # a logger's missing package
    budget = parse_budget(args.memory_budget) if args.memory_budget is not None else None
    if data_file is not None:
        source_files(data_file)  # a file, or a folder or glob holding some
    storage = args.checkpoint_storage
    if storage is not None and ("://" not in storage or storage.startswith("file://")):
        check_output_path(Path(storage.removeprefix("file://")), "--checkpoint-storage")
    return budget


def job_options(cfg: Any, identity: dict[str, Any], budget: Any, tracker: Any) -> JobOptions:
    """The job's options: the run options given (one definition, `RunOptions`), and these."""
    from foxhunt.cli.train_config import qat_config
    from foxhunt.jobs.train import JobOptions
    from foxhunt.training.run_options import RunOptions

    args = cfg.options
    return JobOptions(
        **{f.name: getattr(args, f.name) for f in fields(RunOptions)},
        resume=args.resume is not None,
        identity=identity,
        qat=qat_config(cfg),
        memory_budget=budget,
        callbacks=() if tracker is None else (tracker,),
    )


def finish(result: JobResult, folder: RunFolder, report: bool, tracker: Any) -> None:
    """The main rank's end: the folder committed, the table printed, the report written."""
    from foxhunt.report import write_report

    if tracker is not None:  # before the commit renames the folder its files are in
        tracker.log_results(result.metrics)
    final = folder.commit()  # complete: only now does it replace an earlier run
    print(result.table)
    print(f"run saved to {final} (metrics.json, model.safetensors, config.json)")
    written = write_report(final, job=result) if report else None
    if written is not None:
        print(f"report: {written}")  # written from the job's model and data
    if tracker is not None:
        tracker.finish(final, written)


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
