"""`foxhunt diagnose`: when a network does not learn, can it fit a small sample, and which
learning rates does its loss fall at? The train command's data, model and training flags."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from foxhunt.cli.resolve import Command, add_command, parsed


@dataclass(frozen=True, kw_only=True)
class DiagnoseOptions:
    """Where the checks write.

    Attributes:
        output_dir: the folder of diagnose.json (default: runs/diagnose-<date-time>).
    """

    output_dir: Path | None = None


def command() -> Command:
    from foxhunt.cli.generated import Section  # the configs: not for `foxhunt --help`
    from foxhunt.cli.train_config import DATA, MODEL, TRAINING, run_command
    from foxhunt.training.diagnose_config import DiagnoseConfig

    sections = (
        DATA,
        MODEL,
        TRAINING,
        Section("diagnose", DiagnoseConfig),
        Section("options", DiagnoseOptions),
    )
    return run_command(
        prog="foxhunt diagnose",
        description="Check a network that does not learn, on the bars and model `foxhunt "
        "train` would use with the same flags: the overfit check (can it fit a few hundred "
        "training windows well below its calibrated head's loss: PASS/FAIL) and the "
        "learning-rate range test (the loss over exponentially growing rates, a suggested "
        "lr); a table, and diagnose.json (docs/forecasting.md, 'When the network does not "
        "learn'). `foxhunt train --diagnostics` records per-module gradients, update ratios "
        "and selection entropy each epoch.",
        sections=sections,
    )


def register(sub: Any) -> None:
    add_command(sub, "diagnose", "check why a network does not learn (overfit, lr range)", run)


def run(line: argparse.Namespace) -> int:
    cfg = parsed(command(), line.argv)
    if cfg is None:  # --print-config printed it
        return 0
    from foxhunt.training.diagnose_config import DiagnoseConfig

    settings = DiagnoseConfig(**cfg.diagnose.as_dict())  # refused before torch loads
    from foxhunt.cli.train_config import run_config
    from foxhunt.jobs.diagnose import DIAGNOSE_FILE, diagnose, summary
    from foxhunt.runs import check_output_path

    config = run_config(cfg)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    output_dir = Path(cfg.options.output_dir or Path("runs") / f"diagnose-{stamp}")
    check_output_path(output_dir, "--output-dir")
    diagnosis = diagnose(config, settings, output_dir)
    print(summary(diagnosis))
    print(f"written: {output_dir / DIAGNOSE_FILE}")
    return 0
