"""`foxhunt backtest`: walk-forward folds, a train job per fold, forecasts scored and traded."""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, parsed
from foxhunt.errors import UsageError

log = logging.getLogger("foxhunt.backtest")


@dataclass(frozen=True, kw_only=True)
class BacktestOptions:
    """Where the backtest goes.

    Attributes:
        output_dir: backtest folder (required; resumable).
        report: write DIR/report/backtest.html at the end.
    """

    output_dir: Path | None = None
    report: bool = True


def backtest_command() -> Command:
    """The data, model and training sections of `foxhunt train` (not its run-folder, resume
    or DDP options; nor test_fraction: the folds cut the test spans), then the backtest's."""
    from foxhunt.backtest import BacktestConfig, CostModel
    from foxhunt.cli.train_config import DATA, MODEL, TRAINING, run_command

    data = replace(DATA, exclude=(*DATA.exclude, "test_fraction"))
    sections = (
        data,
        MODEL,
        TRAINING,
        Section("backtest", BacktestConfig, exclude=("costs",)),
        Section("costs", CostModel),
        Section("options", BacktestOptions),
    )
    return run_command(
        prog="foxhunt backtest",
        description="Walk-forward backtest: folds, baselines and a signal (docs/backtest.md).",
        sections=sections,
    )


command = backtest_command  # every subcommand module's name for its arguments


def register(sub: Any) -> None:
    add_command(sub, "backtest", "walk-forward backtest: folds, baselines and a signal", run)


def run(line: argparse.Namespace) -> int:
    from foxhunt.backtest import BacktestConfig, CostModel

    cfg = parsed(backtest_command(), line.argv)
    if cfg is None:
        return 0
    # imported once the line is parsed: `foxhunt backtest --help` needs no torch
    from foxhunt.backtest import run_backtest
    from foxhunt.cli.train_config import run_config
    from foxhunt.data.sources import source_files

    if cfg.options.output_dir is None:
        raise UsageError("backtest: --output-dir DIR is required (the backtest folder)")
    if cfg.data.path is not None:
        source_files(cfg.data.path)  # a file, or a folder or glob holding some
    config = run_config(cfg)
    bt = BacktestConfig(**cfg.backtest.as_dict(), costs=CostModel(**cfg.costs.as_dict()))
    output_dir = Path(cfg.options.output_dir)
    result = run_backtest(config, output_dir, bt)
    print(summary_table(result))
    print(f"backtest saved to {output_dir / 'backtest.json'}")
    if cfg.options.report:
        from foxhunt.backtest.report import write_backtest_report

        print(f"report: {write_backtest_report(output_dir, result)}")
    return 0


#: how a fold's line says whose weights forecast (backtest.json's "weights" of each fold)
WEIGHTS = {"trained": " (trained weights)", "initial": " (initial weights: the gate kept the head)"}


def _weights(label: Any) -> str:
    if isinstance(label, str) and label.startswith("head:"):
        return f" (the {label[5:]} head: it beat the kept model on validation)"
    return WEIGHTS.get(label, "")


def summary_table(result: dict[str, Any]) -> str:
    """Per fold: the TFT's mean quantile loss and each baseline's; then the aggregate."""
    lines = []
    for fold in result["folds"]:
        names = {"tft": fold["metrics"], **fold["baselines"]}
        cells = ", ".join(f"{n} {_num(m.get('mean_quantile_loss'))}" for n, m in names.items())
        weights = _weights(fold.get("weights"))
        lines.append(f"fold {fold['index']}{weights}: {cells}")
        lines += _mcs_line(f"fold {fold['index']}", fold)
    s = result["summary"]
    lines.append(f"all folds: TFT mean QL {json.dumps(s['mean_quantile_loss'])}")
    lines += _mcs_line("all folds", s)
    tft = s["signal"]["tft"]
    lines.append(
        f"signal (TFT): net {_num(tft['net_pnl'])}, Sharpe {_num(tft['sharpe'])}, deflated "
        f"{_num(s['deflated_sharpe']['value'])}"
    )
    return "\n".join(lines)


def _mcs_line(where: str, block: dict[str, Any]) -> list[str]:
    """The forecasters inside the 90% model confidence set (none for an older backtest.json)."""
    if "differences" not in block:
        return []
    return [f"{where}: in the 90% MCS: {', '.join(block['differences']['mcs']['included'])}"]


def _num(value: Any) -> str:
    return "nan" if value is None else f"{value:.4f}"
