"""`foxhunt` command line: one module per subcommand, each with `register` and `run`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType

from foxhunt.errors import FoxhuntError


def subcommands() -> list[ModuleType]:
    from foxhunt.cli import bench_memory, evaluate, export, predict, report, train

    return [train, predict, evaluate, report, bench_memory, export]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="foxhunt",
        description="Temporal Fusion Transformers for futures bars.",
    )
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in subcommands():
        module.register(sub)
    return parser


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(message)s", "%H:%M:%S"))
    root = logging.getLogger("foxhunt")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").handlers[:] = [handler]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    try:
        return int(args.run(args))
    except FoxhuntError as exc:
        print(f"foxhunt: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("foxhunt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
