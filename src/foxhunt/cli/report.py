"""`foxhunt report`: an HTML report with figures for a trained run."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foxhunt.cli.common import data_section
from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, generated_command, resolve
from foxhunt.config_fields import setting


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """The run to report on.

    Attributes:
        run_dir: folder of a trained run; the report goes to RUN_DIR/report/report.html.
    """

    run_dir: Path | None = setting(None, positional=True)


def command() -> Command:
    # data.path: the run's bars, if they moved since training
    sections = (data_section("path"), Section("", ReportOptions))
    return generated_command(
        "foxhunt report",
        "Write RUN_DIR/report/report.html and its PNGs; --parquet-file FILE: the "
        "run's bars, if they moved since training.",
        sections,
        required=("run_dir",),
    )


def register(sub: Any) -> None:
    add_command(sub, "report", "write RUN_DIR/report/report.html and its PNGs", run)


def run(line: argparse.Namespace) -> int:
    args = resolve(command(), line.argv)[1]
    from foxhunt.report import write_report  # matplotlib: not for --help

    path = write_report(args.run_dir, args.data.path)
    print(f"report: {path}")
    return 0
