"""Launch a function on N CPU processes (gloo) the way torchrun would, with a hard deadline.

Each worker gets RANK / LOCAL_RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT in its
environment, one intra-op thread, and its stdout + stderr in `out_dir/rank{r}.log`. Unlike
`torch.multiprocessing.spawn`, a worker that dies does not take the others down: the tests
need to see what the survivors do. Whatever is still running at the deadline is killed and
reported as hung, so a test never hangs.

Workers are forked from a forkserver that imported torch, foxhunt and the workers once per
session (``PRELOAD``): a fresh interpreter, as with ``spawn``, that need not import them again
for every launch (~3 s per worker on the 2-core CI machine). The forkserver never runs torch
code, so no thread or process group of its own is forked; each worker gets the launching
process's environment, as a spawned one would. A launch with ``primary`` (a rank that dies or
hangs) spawns its workers, as torchrun starts the `foxhunt` command: forked from the
forkserver, the survivor of a hung rank once hung after its error line, in the cleanup of
the caught error, instead of exiting.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from foxhunt.data import PreparedData
from foxhunt.model.config import TFTConfig
from foxhunt.training.config import TrainingConfig
from foxhunt.training.trainer import Trainer
from helpers import (
    SYNTHETIC_CLI,
    TINY_CLI,
    fitted,
    make_trainer,
    tiny_model,
    tiny_training,
)

TINY_ARGS = [
    *SYNTHETIC_CLI, *TINY_CLI, "--max-steps-per-epoch", "4", "--seed", "3", "--device", "cpu",
]  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    exitcodes: list[int | None]  # None: still running at the deadline, then killed
    seconds: list[float]  # when each rank exited, from the launch
    logs: list[str]

    @property
    def hung(self) -> list[int]:
        return [rank for rank, code in enumerate(self.exitcodes) if code is None]

    def report(self) -> str:
        return "\n".join(
            f"--- rank {r}: exit {c} after {s:.1f}s\n{log}"
            for r, (c, s, log) in enumerate(
                zip(self.exitcodes, self.seconds, self.logs, strict=True)
            )
        )


@contextmanager
def reserved_ports(count: int = 1) -> Iterator[list[int]]:
    """Free loopback ports, kept from every other process until the block ends: each stays bound
    here (SO_REUSEADDR, never listening), so the kernel gives it to no other ``bind(0)`` or
    outgoing connection, e.g. of a test on another xdist worker, while rank 0's TCPStore, which
    binds with SO_REUSEADDR too, can still listen on it. A port bound and released at once (or
    a fixed one) could be taken before rank 0 binds it."""
    with ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket())
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
        yield ports


#: imported once by the forkserver the workers fork from (torch._dynamo: the first module
#: built imports it, ~1 s)
PRELOAD = ["torch", "torch._dynamo", "foxhunt.cli", "ddp_workers"]


def _entry(
    target: Callable[..., int | None],
    rank: int,
    world_size: int,
    port: int,
    out_dir: Path,
    environment: dict[str, str],
    kwargs: dict[str, Any],
) -> None:
    os.environ.clear()  # the launching process's, not the forkserver's from its start
    os.environ.update(environment)
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        OMP_NUM_THREADS="1",
    )
    log = open(out_dir / f"rank{rank}.log", "w", buffering=1)  # noqa: SIM115 (lives until exit)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    torch.set_num_threads(1)
    sys.exit(target(rank=rank, out_dir=out_dir, **kwargs) or 0)


def launch(
    target: Callable[..., int | None],
    out_dir: Path,
    *,
    world_size: int = 2,
    timeout_s: float = 60.0,
    primary: int | None = None,
    **kwargs: Any,
) -> Outcome:
    """Run `target(rank=, out_dir=, **kwargs)` on `world_size` processes.

    With `primary`, once that rank has exited the others get 2 s and are then killed (as
    torchrun tears the group down): a test of a hung rank waits for the survivor only.
    """
    with reserved_ports() as [port]:
        return _launch(target, out_dir, port, world_size, timeout_s, primary, kwargs)


def _launch(
    target: Callable[..., int | None],
    out_dir: Path,
    port: int,
    world_size: int,
    timeout_s: float,
    primary: int | None,
    kwargs: dict[str, Any],
) -> Outcome:
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("forkserver" if primary is None else "spawn")
    if primary is None:
        ctx.set_forkserver_preload(PRELOAD)  # read when the forkserver starts: the first launch
    environment = dict(os.environ)
    procs = [
        ctx.Process(
            target=_entry,
            args=(target, rank, world_size, port, out_dir, environment, kwargs),
            daemon=True,
        )
        for rank in range(world_size)
    ]
    start = time.monotonic()
    for p in procs:
        p.start()
    exited: dict[int, float] = {}
    deadline = start + timeout_s
    while time.monotonic() < deadline and len(exited) < world_size:
        for rank, p in enumerate(procs):
            if rank not in exited and not p.is_alive():
                exited[rank] = time.monotonic() - start
        if primary is not None and primary in exited:
            deadline = min(deadline, start + exited[primary] + 2.0)
        time.sleep(0.05)
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join()
    now = time.monotonic() - start
    codes = [p.exitcode if rank in exited else None for rank, p in enumerate(procs)]
    logs = [(out_dir / f"rank{r}.log").read_text() for r in range(world_size)]
    return Outcome(codes, [exited.get(r, now) for r in range(world_size)], logs)


# --- a tiny model and trainer, the same in the parent and the workers ----------------------
def tiny_model_config(data: PreparedData, dropout: float) -> TFTConfig:
    return fitted(tiny_model(hidden_size=8, dropout=dropout), data)


TINY_TRAINING = tiny_training(epochs=2, seed=5)


def tiny_trainer(
    data: PreparedData,
    *,
    dropout: float = 0.0,
    rank: int = 0,
    world_size: int = 1,
    checkpointing: str = "none",
    training: TrainingConfig = TINY_TRAINING,
) -> Trainer:
    model_config = replace(tiny_model_config(data, dropout), checkpointing=checkpointing)
    return make_trainer(data, model_config, training, rank=rank, world_size=world_size)


class FirstStepGrads:
    """A trainer callback keeping the (all-reduced, clipped) gradients of the first step."""

    def __init__(self) -> None:
        self.grads: dict[str, torch.Tensor] = {}

    def on_step_end(self, trainer: Trainer, loss: float) -> None:
        if not self.grads:
            params = trainer.model.named_parameters()
            self.grads = {n: p.grad.clone() for n, p in params if p.grad is not None}


def max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max((float((a[k] - b[k]).abs().max()) for k in a if a[k].numel()), default=0.0)


def cli_args(*extra: str) -> list[str]:
    """`foxhunt train` on the tiny config (dropout 0.1), without the HTML report."""
    return ["train", *TINY_ARGS, "--no-report", *extra]
