"""`foxhunt` command line: one module per subcommand, each with `register` and `run`.

Every subcommand's arguments are generated from config dataclasses (`cli/generated.py`): the
top-level parser here knows only `--log-level` and the subcommands' names, and hands the rest
of the line (`--help` too) to the subcommand's `run`, which parses it (`cli/resolve.py`)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

from foxhunt.build_lock import check_kernel_environment
from foxhunt.errors import FoxhuntError, UsageError
from foxhunt.process_exit import leave_now
from foxhunt.training.threads import check_thread_environment

if TYPE_CHECKING:
    from foxhunt.cli.resolve import Command

log = logging.getLogger("foxhunt")


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line through `main` (subparsers inherit the class)."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("foxhunt").strip()
        raise UsageError(f"{command}: {message}" if command else message)


def subcommands() -> list[ModuleType]:
    from foxhunt.cli import (
        backtest,
        bench_memory,
        diagnose,
        evaluate,
        export,
        inspect,
        planted,
        predict,
        report,
        train,
        tune,
    )

    return [
        train,
        predict,
        evaluate,
        inspect,
        report,
        bench_memory,
        export,
        backtest,
        tune,
        planted,
        diagnose,
    ]


def commands() -> dict[str, Command]:
    """Every subcommand's generated arguments, by name (imports the config modules)."""
    return {m.__name__.rpartition(".")[2].replace("_", "-"): m.command() for m in subcommands()}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The top-level options and the subcommand, with the rest of the line as ``argv``."""
    args, rest = parser.parse_known_args(argv)
    args.argv = rest
    return args


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
    try:
        args = parse(build_parser(), argv)
    except UsageError as exc:
        return fail(exc, exc.exit_code)
    configure_logging(args.log_level)
    try:
        check_thread_environment()  # before torch loads libgomp, which reads them then
        check_kernel_environment()  # before a run folder exists
        return int(args.run(args))
    except FoxhuntError as exc:
        code = fail(exc, exc.exit_code)
        if exc.leave_at_once:  # before the error's frames go: tearing down the DDP model and
            leave_now(code)  # process group they hold can block on the lost peer
        return code
    except KeyboardInterrupt:
        print("foxhunt: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        return fail("out of memory; use smaller sizes (--hidden-size, --batch-size)", 2)
    except OSError as exc:  # the environment (disk full, permissions), not a bug
        where = f": {exc.filename}" if exc.filename else ""
        return fail(f"{exc.strerror or exc}{where}", 2)
    except Exception as exc:  # a bug: one line, the traceback only at DEBUG
        log.debug("internal error", exc_info=True)
        first = str(exc).splitlines()[0] if str(exc) else ""
        print(
            f"foxhunt: internal error: {type(exc).__name__}: {first} (a bug; rerun with "
            "--log-level DEBUG for the traceback and report it)",
            file=sys.stderr,
        )
        return 1


def fail(message: object, code: int) -> int:
    text = " ".join(str(message).split())  # one line, whatever the message holds
    print(f"foxhunt: error: {text}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
