"""`foxhunt tune`: an Optuna study over a YAML search space, each trial a train job (or a
walk-forward backtest) on the base config that `foxhunt train`'s flags or --config give."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from foxhunt.cli import backtest as backtest_cli
from foxhunt.cli import train as train_cli
from foxhunt.cli.common import share_options
from foxhunt.data.sources import source_files
from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.input_path import check_readable_file
from foxhunt.runs import RunConfig, check_output_file, check_output_path

#: backtest flags a study does not take: its --trials is the study's, folds run in the trial
NOT_FROM_BACKTEST = ("trials", "jobs")


def register(sub: Any) -> None:
    p = sub.add_parser("tune", help="hyperparameter search (Optuna) over any config field")
    shared = share_options(p, train_cli, backtest_cli.SHARED_GROUPS)
    s = p.add_argument_group("study (see docs/tuning.md)")
    s.add_argument("--space", type=Path, required=True, help="search space YAML")
    s.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE.yaml",
        help="base config (data, model, training sections, as best.yaml or a run's "
        "config.json), instead of the data, model and training flags",
    )
    s.add_argument("--trials", type=int, default=20, help="finished or pruned trials in all")
    s.add_argument(
        "--storage", default=None, help="SQLAlchemy URL (default: sqlite:///DIR/study.db)"
    )
    s.add_argument("--study-name", default="foxhunt", help="the study in the database")
    s.add_argument("--pruner", default="median", choices=["median", "hyperband", "none"])
    s.add_argument(
        "--startup-trials", type=int, default=2, help="median pruner: finished trials first"
    )
    s.add_argument("--keep", default="best", choices=["best", "all"], help="trial folders kept")
    s.add_argument(
        "--backtest",
        action="store_true",
        help="objective: the walk-forward loss of a backtest (the backtest flags below)",
    )
    s.add_argument(
        "--heartbeat", type=int, default=60, help="seconds; a trial silent 2x as long is failed"
    )
    s.add_argument("--sampler-seed", type=int, default=None, help="seed of the TPE sampler")
    s.add_argument(
        "--output-dir", type=Path, required=True, help="study folder: trial-NNNN/, best.yaml"
    )
    groups = ("backtest (see docs/backtest.md)", "signal costs (defaults: ES)")
    share_options(p, backtest_cli, groups, skip=NOT_FROM_BACKTEST)
    p.set_defaults(run=run, shared_defaults=shared)


def base_config(args: argparse.Namespace) -> RunConfig:
    """`foxhunt train`'s flags, or --config FILE.yaml (then those flags stay at defaults)."""
    if args.config is None:
        return train_cli.run_config_from_args(args)
    from foxhunt.tune import read_config_yaml

    given = sorted(
        "--" + dest.replace("_", "-")
        for dest, default in args.shared_defaults.items()
        if getattr(args, dest) != default
    )
    if given:
        raise ConfigError(
            f"--config {args.config} is the whole base config: set {', '.join(given)} in it "
            "(or in the search space), not as flags"
        )
    return read_config_yaml(args.config)


def run(args: argparse.Namespace) -> int:
    try:
        import optuna  # noqa: F401  (the study's engine; an optional dependency)
    except ImportError:
        raise FoxhuntError(
            "foxhunt tune needs Optuna: pip install 'foxhunt[tune]' (optuna, SQLAlchemy)"
        ) from None
    from foxhunt.tune import BEST_FILE, TuneConfig, best_of, read_space, run_study

    check_readable_file(args.space, "search space (--space)")
    if args.config is not None:
        check_readable_file(args.config, "base config (--config)")
    if args.data_file is not None:
        source_files(args.data_file)  # a file, or a folder or glob holding some
    check_output_path(args.output_dir)
    check_output_file(args.output_dir, "--output-dir")  # not RUN/checkpoints, RUN/report
    base = base_config(args)
    tune = TuneConfig(
        trials=args.trials,
        storage=args.storage,
        study_name=args.study_name,
        pruner=args.pruner,
        startup_trials=args.startup_trials,
        keep=args.keep,
        backtest=backtest_cli.backtest_config_from_args(args, trials=args.trials, jobs=1)
        if args.backtest
        else None,
        heartbeat=args.heartbeat,
        sampler_seed=args.sampler_seed,
    )
    space = read_space(args.space, base)
    study = run_study(base, space, args.output_dir, tune)
    best = args.output_dir / BEST_FILE
    if best.is_file():
        trial = best_of(study)
        assert trial is not None and trial.value is not None
        print(f"best: trial {trial.number}, value {trial.value:.6g}: {trial.params}")
        print(f"best config: {best} (foxhunt train --config {best})")
        if args.backtest:
            print(f"deflated Sharpe: backtests of this study count {args.trials} trials")
    else:
        print("no trial completed (all pruned or failed): no best config")
    print(f"study report: {args.output_dir} (trials.csv, *.png)")
    return 0
