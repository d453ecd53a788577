"""`foxhunt backtest`: walk-forward folds, a train job per fold, forecasts scored and traded."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxhunt.cli import train as train_cli
from foxhunt.cli.common import share_options
from foxhunt.data.sources import source_files
from foxhunt.errors import ConfigError

if TYPE_CHECKING:
    from foxhunt.backtest import BacktestConfig

log = logging.getLogger("foxhunt.backtest")

#: the groups of `foxhunt train` a backtest shares (not its run-folder, resume or DDP flags)
SHARED_GROUPS = ("data file", "data", "model", "training")
NOT_SHARED = ("test_fraction",)  # the folds cut the test spans


def register(sub: Any) -> None:
    p = sub.add_parser("backtest", help="walk-forward backtest: folds, baselines and a signal")
    share_options(p, train_cli, SHARED_GROUPS, skip=NOT_SHARED)
    b = p.add_argument_group("backtest (see docs/backtest.md)")
    b.add_argument("--folds", type=int, default=4, help="test spans, at the end of the file")
    b.add_argument("--scheme", default="expanding", choices=["expanding", "rolling"])
    b.add_argument(
        "--test-size",
        default=None,
        help='each test span: "10d" or a bar count (default: the span over folds + 1)',
    )
    b.add_argument("--embargo", default="1h", help="gap before each test span (default 1h)")
    b.add_argument("--refit", default="full", choices=["full", "warm", "none"])
    b.add_argument("--jobs", type=int, default=1, help="folds in parallel processes (full)")
    b.add_argument("--trials", type=int, default=1, help="configurations tried (deflated Sharpe)")
    b.add_argument("--resamples", type=int, default=2000, help="block-bootstrap draws")
    b.add_argument("--checkpoint-every", type=int, default=None, help="steps between checkpoints")
    c = p.add_argument_group("signal costs (defaults: ES)")
    c.add_argument("--tick-size", type=float, default=0.25, help="points per tick")
    c.add_argument("--cost-ticks", type=float, default=0.5, help="slippage per side, ticks")
    c.add_argument("--commission", type=float, default=2.25, help="per contract and side")
    c.add_argument("--point-value", type=float, default=50.0, help="currency per point")
    p.add_argument("--output-dir", type=Path, required=True, help="backtest folder (resumable)")
    p.add_argument("--no-report", action="store_true", help="skip DIR/report/backtest.html")
    p.set_defaults(run=run, test_fraction=0.15)


def run(args: argparse.Namespace) -> int:
    from foxhunt.backtest import run_backtest

    if args.data_file is not None:
        source_files(args.data_file)  # a file, or a folder or glob holding some
    config = train_cli.run_config_from_args(args)
    result = run_backtest(config, args.output_dir, backtest_config_from_args(args))
    print(summary_table(result))
    print(f"backtest saved to {args.output_dir / 'backtest.json'}")
    if not args.no_report:
        from foxhunt.backtest.report import write_backtest_report

        print(f"report: {write_backtest_report(args.output_dir, result)}")
    return 0


def backtest_config_from_args(args: argparse.Namespace, **overrides: Any) -> BacktestConfig:
    """The backtest group's and the signal costs' flags (``foxhunt tune --backtest`` too)."""
    from foxhunt.backtest import BacktestConfig, CostModel

    if args.tick_size <= 0 or args.point_value <= 0:
        raise ConfigError("--tick-size and --point-value must be > 0")
    fields = dict(
        folds=args.folds,
        scheme=args.scheme,
        test_size=args.test_size,
        embargo=args.embargo,
        refit=args.refit,
        jobs=getattr(args, "jobs", 1),
        trials=getattr(args, "trials", 1),
        resamples=args.resamples,
        checkpoint_every=args.checkpoint_every,
        costs=CostModel(
            tick_size=args.tick_size,
            cost_ticks=args.cost_ticks,
            commission=args.commission,
            point_value=args.point_value,
        ),
    )
    return BacktestConfig(**{**fields, **overrides})


def summary_table(result: dict[str, Any]) -> str:
    """Per fold: the TFT's mean quantile loss and each baseline's; then the aggregate."""
    lines = []
    for fold in result["folds"]:
        names = {"tft": fold["metrics"], **fold["baselines"]}
        cells = ", ".join(f"{n} {_num(m.get('mean_quantile_loss'))}" for n, m in names.items())
        lines.append(f"fold {fold['index']}: {cells}")
    s = result["summary"]
    lines.append(f"all folds: TFT mean QL {json.dumps(s['mean_quantile_loss'])}")
    tft = s["signal"]["tft"]
    lines.append(
        f"signal (TFT): net {_num(tft['net_pnl'])}, Sharpe {_num(tft['sharpe'])}, deflated "
        f"{_num(s['deflated_sharpe']['value'])}"
    )
    return "\n".join(lines)


def _num(value: Any) -> str:
    return "nan" if value is None else f"{value:.4f}"
