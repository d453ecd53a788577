"""Start-up time of the CLI: what a user waits for a help text or a single forecast.

    .venv/bin/python benchmarks/startup.py [--repeats 5] [--run DIR --data FILE] [--quick]

Times, each in a fresh interpreter (``python -m foxhunt ...``, as the ``foxhunt`` script
runs it), ``foxhunt --help``, ``foxhunt train --help`` and a one-window ``foxhunt predict
RUN --parquet-file FILE``, and prints the median wall and CPU seconds of ``--repeats`` runs
beside ``python -c pass`` (the interpreter alone). Without ``--run`` it first trains a tiny
run on seeded synthetic bars (8 days, one symbol: ``predict`` forecasts one window) in a
temporary folder, in this process; ``--quick`` times each command once (smoke test). The
help texts import neither torch nor scipy nor matplotlib (``tests/cli/test_startup.py``);
``predict`` imports torch, which is most of its time. A busy machine slows every row: the
last line says how many cores other processes kept busy meanwhile.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_quiet import cpu_sample, machine_busy_cores

TINY = ["--lookback", "16", "--horizon", "4", "--hidden-size", "8", "--attention-heads", "2",
        "--variable-hidden-size", "4", "--epochs", "1", "--max-steps-per-epoch", "3",
        "--no-report", "--seed", "0"]  # fmt: skip


def foxhunt(*args: str) -> list[str]:
    return [sys.executable, "-m", "foxhunt", *args]


def timed(command: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh process running ``command``; it must exit 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} exited {done.returncode}: {done.stderr}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def tiny_run(folder: Path) -> tuple[Path, Path]:
    """A tiny run trained with ``foxhunt train`` on 8 days of seeded synthetic bars, and the
    bars (one symbol: ``predict`` forecasts one window). Trained in this process: what is
    timed runs in fresh ones."""
    from foxhunt.cli import main as cli_main
    from foxhunt.data import generate_bars

    data = folder / "bars.parquet"
    generate_bars(days=8, seed=1).to_parquet(data)
    run = folder / "run"
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(["train", "--parquet-file", str(data), *TINY, "--output-dir", str(run)])
    if code != 0:
        raise SystemExit(f"foxhunt train exited {code}")
    return run, data


def measure(run: Path, data: Path, repeats: int) -> list[tuple[str, float, float]]:
    """(command, median wall s, median CPU s) per command; the commands take turns, so a
    machine getting busier slows them alike."""
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "foxhunt --help": foxhunt("--help"),
        "foxhunt train --help": foxhunt("train", "--help"),
        "foxhunt predict RUN --parquet-file F": foxhunt(
            "predict", str(run), "--parquet-file", str(data)
        ),
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            times[name].append(timed(command))
    return [
        (
            name,
            statistics.median(w for w, _ in runs),
            statistics.median(c for _, c in runs),
        )
        for name, runs in times.items()
    ]


def table(rows: list[tuple[str, float, float]], repeats: int) -> str:
    lines = [
        f"| command (fresh interpreter, median of {repeats}) | wall s | CPU s |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| `{name}` | {wall:.2f} | {cpu:.2f} |" for name, wall, cpu in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command (median)")
    parser.add_argument("--run", type=Path, default=None, help="a trained run to predict with")
    parser.add_argument("--data", type=Path, default=None, help="its bars (with --run)")
    parser.add_argument("--quick", action="store_true", help="each command once (smoke test)")
    args = parser.parse_args()
    if (args.run is None) != (args.data is None):
        parser.error("--run and --data go together")
    repeats = 1 if args.quick else args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        run, data = (args.run, args.data) if args.run else tiny_run(Path(tmp))
        machine, start = cpu_sample(), time.perf_counter()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = measure(run, data, repeats)
        busy = machine_busy_cores(machine, cpu_sample())
        elapsed = time.perf_counter() - start
        done = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(table(rows, repeats))
    own = done.ru_utime + done.ru_stime - children.ru_utime - children.ru_stime
    others = "?" if busy is None else f"{max(0.0, busy - own / elapsed):.1f}"
    print(f"{os.cpu_count()} cores; other processes kept {others} of them busy meanwhile")


if __name__ == "__main__":
    main()
