"""Training throughput of 1 process against 2 DDP processes (gloo) on CPU, in one run.

    .venv/bin/python benchmarks/distributed.py [--steps 30] [--warmup 5] [--json]

Each configuration trains the real `Trainer` (window dataset, batch sampler, DataLoader,
forward, quantile loss, backward, DDP all-reduce, clipping, AdamW) on built-in synthetic
bars at the CLI's default model size, with the same global batch. It is timed between two
barriers after `--warmup` untimed steps; samples/s = global batch x steps / seconds.

Configurations: 1 process with all `--cores` threads, 1 process with 1 thread, and 2 DDP
processes with `cores / 2` threads each (the same cores in total; with `--cores 1` the first
two are one, measured once). The load average is printed before and after: on a small shared
machine, 2 processes cannot show real scaling (they split the same cores and add an
all-reduce per step), so read the numbers as the cost of the DDP machinery, not as a
speed-up.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from queue import Empty
from typing import Any

import torch

from foxhunt.data import DataConfig, make_loader, prepare_data
from foxhunt.jobs.train import fit_model_config
from foxhunt.model.config import TFTConfig
from foxhunt.model.factory import DEFAULT_MODEL, build_model
from foxhunt.training.config import TrainingConfig
from foxhunt.training.distributed import barrier, init_distributed, shutdown_distributed
from foxhunt.training.trainer import Trainer
from foxhunt.transforms import apply_model_transforms


@dataclass(frozen=True, kw_only=True)
class Bench:
    """What every configuration trains."""

    batch_size: int = 64
    """Global batch (split across the processes)."""
    steps: int = 30
    """Timed optimizer steps."""
    warmup: int = 5
    """Untimed steps first."""
    synthetic_days: int = 30
    lookback: int = 64
    horizon: int = 8
    hidden_size: int = 32
    dropout: float = 0.1


@dataclass(frozen=True)
class Result:
    processes: int
    threads_per_process: int
    samples_per_s: float
    step_ms: float
    load_before: float
    load_after: float


def build_trainer(bench: Bench, rank: int, world_size: int) -> Trainer:
    data = prepare_data(
        DataConfig(
            synthetic_days=bench.synthetic_days, lookback=bench.lookback, horizon=bench.horizon
        )
    )
    base = TFTConfig(
        hidden_size=bench.hidden_size,
        variable_hidden_size=16,  # the benchmark's model as measured (TFTConfig's default was 16)
        dropout=bench.dropout,
    )
    model_config = fit_model_config(base, data)
    training = TrainingConfig(batch_size=bench.batch_size, device="cpu", seed=0)
    torch.manual_seed(training.seed)
    return Trainer(
        apply_model_transforms(build_model(DEFAULT_MODEL, model_config), model_config),
        training,
        train_set=data.train,
        val_set=data.validation,
        quantiles=model_config.quantiles,
        rank=rank,
        world_size=world_size,
    )


def timed_steps(bench: Bench, rank: int, world_size: int) -> float:
    """Seconds for `bench.steps` steps, measured between barriers."""
    trainer = build_trainer(bench, rank, world_size)
    needed = bench.warmup + bench.steps
    if len(trainer.sampler) < needed:
        raise SystemExit(f"only {len(trainer.sampler)} batches per epoch; raise synthetic_days")
    batches = iter(make_loader(trainer.train_set, batch_sampler=trainer.sampler))
    for _ in range(bench.warmup):
        trainer.train_step(next(batches))
    barrier()
    start = time.perf_counter()
    for _ in range(bench.steps):
        trainer.train_step(next(batches))
    barrier()
    return time.perf_counter() - start


def _worker(bench: Bench, rank: int, world_size: int, port: int, threads: int, out: Any) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
    )
    torch.set_num_threads(threads)
    init_distributed("cpu", timeout_s=120)
    try:
        seconds = timed_steps(bench, rank, world_size)
    finally:
        shutdown_distributed()
    if rank == 0:
        out.put(seconds)


@contextmanager
def reserved_port() -> Iterator[int]:
    """A free loopback port, kept bound here (SO_REUSEADDR, never listening) while the ranks
    run: no other process's bind(0) or connection takes it before rank 0's TCPStore, which binds
    with SO_REUSEADDR too, listens on it (the suite runs this beside other tests)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def measure(bench: Bench, processes: int, threads: int) -> Result:
    with reserved_port() as port:
        return _measure(bench, processes, threads, port)


def _measure(bench: Bench, processes: int, threads: int, port: int) -> Result:
    load_before = os.getloadavg()[0]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(bench, rank, processes, port, threads, queue))
        for rank in range(processes)
    ]
    for p in procs:
        p.start()
    while True:  # rank 0 reports its time; a process that died ends the wait
        try:
            seconds = float(queue.get(timeout=1.0))
            break
        except Empty:
            failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if failed:
                for p in procs:
                    p.kill()
                raise SystemExit(f"a benchmark process failed (exit {failed[0]})") from None
    for p in procs:
        p.join()
    return Result(
        processes=processes,
        threads_per_process=threads,
        samples_per_s=bench.batch_size * bench.steps / seconds,
        step_ms=1000 * seconds / bench.steps,
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )


def format_report(results: list[Result], bench: Bench, cores: int) -> str:
    lines = [
        f"foxhunt DDP throughput on CPU: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores visible, {cores} used, torch {torch.__version__}",
        f"global batch {bench.batch_size}, lookback {bench.lookback}, horizon {bench.horizon}, "
        f"hidden {bench.hidden_size}; {bench.steps} timed steps after {bench.warmup}",
        "",
        "processes  threads/proc  samples/s  ms/step  load avg before -> after",
    ]
    for r in results:
        lines.append(
            f"{r.processes:>9}  {r.threads_per_process:>12}  {r.samples_per_s:>9.1f}  "
            f"{r.step_ms:>7.1f}  {r.load_before:.2f} -> {r.load_after:.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=Bench.steps)
    parser.add_argument("--warmup", type=int, default=Bench.warmup)
    parser.add_argument("--batch-size", type=int, default=Bench.batch_size)
    parser.add_argument("--cores", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    bench = Bench(batch_size=args.batch_size, steps=args.steps, warmup=args.warmup)
    cores = max(1, args.cores)
    # with --cores 1 the first two are one configuration: measured once
    plan = list(dict.fromkeys([(1, cores), (1, 1), (2, max(1, cores // 2))]))
    results = []
    for processes, threads in plan:
        print(f"measuring {processes} process(es) x {threads} thread(s)...", file=sys.stderr)
        results.append(measure(bench, processes, threads))
    if args.json:
        report = {"bench": asdict(bench), "results": [asdict(r) for r in results]}
        print(json.dumps(report, indent=2))
    else:
        print(format_report(results, bench, cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
