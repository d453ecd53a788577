"""`foxhunt tune`: an Optuna study over a YAML search space, each trial a train job (or a
walk-forward backtest) on the base config that `foxhunt train`'s flags and --config give
(arguments generated from the config dataclasses, docs/configuration.md)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, parsed
from foxhunt.cli.spellings import Spelling
from foxhunt.errors import FoxhuntError, UsageError
from foxhunt.tune.settings import StudySettings


@dataclass(frozen=True, kw_only=True)
class StudyOptions(StudySettings):
    """The study (docs/tuning.md): how it runs (`StudySettings`), its space and its folder.

    Attributes:
        space: the search space YAML (required).
        backtest: objective: the walk-forward loss of a backtest (the backtest sections);
            its trials count is the study's, for the deflated Sharpe.
        output_dir: study folder: trial-NNNN/, best.yaml (required).
    """

    space: Path | None = None
    backtest: bool = False
    output_dir: Path | None = None


def tune_command() -> Command:
    """`foxhunt train`'s data, model and training sections (the base config; --config FILE
    as for train), the backtest's (without its trials and jobs: the study's), the study."""
    from foxhunt.backtest import BacktestConfig, CostModel
    from foxhunt.cli.train_config import DATA, MODEL, SPELLINGS, TAKEN, TRAINING, run_command

    sections = (
        DATA,
        MODEL,
        TRAINING,
        Section("backtest", BacktestConfig, exclude=("costs", "trials", "jobs")),
        Section("costs", CostModel),
        Section("study", StudyOptions),
    )
    # --backtest is a switch, not a flag of its own: jsonargparse would read the option as the
    # backtest section's name
    switch = Spelling("--backtest", lambda _: [("study.backtest", "true")], takes_value=False)
    return run_command(
        prog="foxhunt tune",
        description="Hyperparameter search (Optuna) over any config field (docs/tuning.md).",
        sections=sections,
        spellings=(*SPELLINGS, switch),
        taken=TAKEN | {"--backtest"},
    )


command = tune_command  # every subcommand module's name for its arguments


def register(sub: Any) -> None:
    add_command(sub, "tune", "hyperparameter search (Optuna) over any config field", run)


def run(line: argparse.Namespace) -> int:
    cfg = parsed(tune_command(), line.argv)
    if cfg is None:
        return 0
    args = cfg.study
    for name in ("space", "output_dir"):
        if getattr(args, name) is None:
            raise UsageError(f"tune: --{name.replace('_', '-')} is required")
    args.space, args.output_dir = Path(args.space), Path(args.output_dir)
    try:
        import optuna  # noqa: F401  (the study's engine; an optional dependency)
    except ImportError:
        raise FoxhuntError(
            "foxhunt tune needs Optuna: pip install 'foxhunt[tune]' (optuna, SQLAlchemy)"
        ) from None
    from foxhunt.backtest import BacktestConfig, CostModel
    from foxhunt.cli.train_config import run_config
    from foxhunt.data.sources import source_files
    from foxhunt.input_path import check_readable_file
    from foxhunt.runs import check_output_file, check_output_path
    from foxhunt.tune import BEST_FILE, TuneConfig, best_of, read_space, run_study

    check_readable_file(args.space, "search space (--space)")
    if cfg.data.path is not None:
        source_files(cfg.data.path)  # a file, or a folder or glob holding some
    check_output_path(args.output_dir)
    check_output_file(args.output_dir, "--output-dir")  # not RUN/checkpoints, RUN/report
    base = run_config(cfg)
    tune = TuneConfig(
        **{f.name: getattr(args, f.name) for f in fields(StudySettings)},
        backtest=BacktestConfig(
            **cfg.backtest.as_dict(),
            costs=CostModel(**cfg.costs.as_dict()),
            trials=args.trials,
            jobs=1,
        )
        if args.backtest
        else None,
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
