"""`foxhunt report`: an HTML report with figures for a trained run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("report", help="write RUN_DIR/report/report.html and its PNGs")
    p.add_argument("run_dir", type=Path, help="folder of a trained run")
    p.add_argument(
        "--parquet-file",
        "--data-file",
        dest="data_file",
        type=Path,
        default=None,
        help="the run's bars, if they moved since training",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from foxhunt.report import write_report  # matplotlib: not for --help

    path = write_report(args.run_dir, args.data_file)
    print(f"report: {path}")
    return 0
