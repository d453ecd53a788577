"""Data-parallel training over several processes: torch.distributed and DistributedDataParallel.

Every rank runs the same program (``torchrun --nproc_per_node=N -m foxhunt train ...``);
torchrun sets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``,
and :func:`init_distributed` forms the process group from them (``env://``): gloo on CPU,
nccl on CUDA with rank r on ``cuda:LOCAL_RANK``. Without those variables, or with
``WORLD_SIZE=1``, nothing here does anything and training is the single-process loop.

This module holds the process group, the DDP wrap (a transform applied after every other
model transform) and the few collectives the loop needs; it does no math of its own.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from foxhunt.errors import ConfigError, FoxhuntError
from foxhunt.training.config import DEFAULT_TIMEOUT_S

log = logging.getLogger("foxhunt.distributed")

T = TypeVar("T")


class DistributedError(FoxhuntError):
    """Another rank died, hung past the timeout, or the process group could not form."""

    exit_code = 1


@dataclass(frozen=True, kw_only=True)
class DistributedContext:
    """Where this process stands among the ranks of a job; the default is a single process.

    Attributes:
        rank: global rank, 0 .. world_size - 1; rank 0 alone logs and writes files.
        local_rank: rank on this machine; selects ``cuda:local_rank``.
        world_size: number of processes in the job (all machines).
        timeout_s: seconds a collective waits for the others before failing.
    """

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise ConfigError(
                f"rank {self.rank} of world size {self.world_size} is impossible; "
                "launch with torchrun, which sets RANK and WORLD_SIZE"
            )
        if self.local_rank < 0:
            raise ConfigError(f"LOCAL_RANK must be >= 0, got {self.local_rank}")
        if self.timeout_s <= 0:
            raise ConfigError(f"--dist-timeout must be > 0 seconds, got {self.timeout_s}")

    @property
    def enabled(self) -> bool:
        """True when several processes train together."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"environment variable {name}={value!r} is not an integer") from None


def context_from_environment(timeout_s: float = DEFAULT_TIMEOUT_S) -> DistributedContext:
    """Rank and world size as torchrun (or any ``env://`` launcher) sets them."""
    return DistributedContext(
        rank=_env_int("RANK", 0),
        local_rank=_env_int("LOCAL_RANK", 0),
        world_size=_env_int("WORLD_SIZE", 1),
        timeout_s=timeout_s,
    )


def uses_cuda(device: str) -> bool:
    return device == "cuda" or (device == "auto" and torch.cuda.is_available())


def init_distributed(
    device: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S
) -> DistributedContext:
    """Form the default process group from the environment; a no-op for a single process."""
    ctx = context_from_environment(timeout_s)
    if not ctx.enabled or dist.is_initialized():
        return ctx
    if not dist.is_available():
        raise DistributedError("this torch build has no torch.distributed; train on one process")
    device_id = None
    if uses_cuda(device):
        count = torch.cuda.device_count()
        if count == 0:
            raise ConfigError("--device cuda was requested but no CUDA device is available")
        if ctx.local_rank >= count:
            raise ConfigError(
                f"LOCAL_RANK {ctx.local_rank} has no GPU (this machine has {count}); "
                "--nproc_per_node must not exceed the GPUs per machine"
            )
        # on a collective timeout, tear the process down instead of hanging (torchrun sets it)
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
        torch.cuda.set_device(ctx.local_rank)
        device_id = torch.device("cuda", ctx.local_rank)
    backend = "nccl" if device_id is not None else "gloo"
    try:
        dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s), device_id=device_id)
    except (RuntimeError, ValueError) as exc:
        raise DistributedError(
            f"rank {ctx.rank}/{ctx.world_size}: could not form the {backend} process group "
            f"within {timeout_s:g}s ({exc}); check MASTER_ADDR/MASTER_PORT or --rdzv-endpoint"
        ) from exc
    if ctx.is_main:
        log.info("distributed: %d processes, %s backend", ctx.world_size, backend)
    return ctx


def shutdown_distributed() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


@contextmanager
def distributed_session(
    device: str = "auto", timeout_s: float = DEFAULT_TIMEOUT_S
) -> Iterator[DistributedContext]:
    """The process group for the duration of a job, destroyed however the job ends; a
    collective failing inside it (a peer died or hung) ends the job with a DistributedError."""
    ctx = init_distributed(device, timeout_s)
    try:
        with peer_failures(ctx):
            yield ctx
    finally:
        shutdown_distributed()


def active() -> bool:
    """A process group of more than one rank exists."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


#: How gloo and nccl word a lost peer or a timeout, when they raise a plain RuntimeError.
# gloo's own words vary with timing: a peer past the timeout shows as "Timed out waiting", or
# as "Application timeout caused pair closure" with no "gloo" in the text at all
COLLECTIVE_FAILURE_MARKS = (
    "gloo",
    "NCCL",
    "c10d",
    "Connection closed",
    "Connection reset",
    "pair closure",
    "Timed out waiting",
)


def is_collective_failure(exc: BaseException) -> bool:
    if isinstance(exc, dist.DistError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(m in text for m in COLLECTIVE_FAILURE_MARKS)


@contextmanager
def peer_failures(ctx: DistributedContext) -> Iterator[None]:
    """Turn a collective's failure (a peer died, or hung past the timeout) into one clear error.

    gloo and nccl report a dead peer or a timeout as an error deep inside a collective (or
    inside DDP's gradient all-reduce in backward); under DDP those are reported as what they
    almost always are, keeping the original's first line. Other errors pass unchanged.
    """
    try:
        yield
    except Exception as exc:
        if not ctx.enabled or not is_collective_failure(exc):
            raise
        first_line = (str(exc).splitlines() or [type(exc).__name__])[0]
        error = DistributedError(
            f"rank {ctx.rank}/{ctx.world_size}: stopped because another rank failed or did not "
            f"answer within --dist-timeout {ctx.timeout_s:g}s; the failing rank's log has the "
            f"cause ({first_line})"
        )
        error.leave_at_once = True
        raise error from exc


def wrap_ddp(model: nn.Module, device: torch.device) -> DistributedDataParallel:
    """The DDP transform: apply it last, after checkpointing/QAT transforms.

    ``find_unused_parameters=False``: every parameter must receive a gradient each step (the
    TFT's forward uses all of them); DDP raises at the next step if one does not.
    """
    device_ids = [device] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids, find_unused_parameters=False)


def all_reduce_sum(values: Sequence[float], device: torch.device) -> list[float]:
    """Element-wise sum over ranks (float64); identical on every rank afterwards."""
    tensor = torch.tensor(list(values), dtype=torch.float64, device=device)
    if active():
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.tolist()


def broadcast_from_main(value: T) -> T:
    """Rank 0's `value` on every rank (pickled; small objects only)."""
    if not active():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def gather_objects(value: T) -> list[T]:
    """Every rank's `value` (pickled; small objects only), in rank order, on every rank."""
    if not active():
        return [value]
    values: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(values, value)
    return values


def main_decides(ctx: DistributedContext, decide: Callable[[], T]) -> T:
    """Run `decide` on rank 0 alone and give every rank its result, or raise its error
    (a FoxhuntError) on every rank, so that all ranks exit the same way."""
    if not ctx.enabled:
        return decide()
    outcome: list[Any] = [None, None]
    if ctx.is_main:
        try:
            outcome = [decide(), None]
        except FoxhuntError as exc:
            outcome = [None, exc]
    result, error = broadcast_from_main(outcome)
    if error is not None:
        raise error
    return result


def barrier() -> None:
    if active():
        dist.barrier()


def rank_step_seed(seed: int, rank: int, epoch: int, batch: int) -> int:
    """The dropout seed of one rank at one batch position: distinct per rank, and a function
    of the position alone, so that a resumed DDP run replays every rank's dropout masks (a
    checkpoint holds rank 0's generator only)."""
    mixed = seed
    for part in (epoch, batch, rank):
        mixed = (mixed * 1_000_003 + part) % (2**61 - 1)
    return mixed


def quiet_other_ranks(ctx: DistributedContext) -> None:
    """Rank 0 logs as configured; other ranks log warnings and errors only, tagged."""
    if ctx.is_main:
        return
    logger = logging.getLogger("foxhunt")
    logger.setLevel(max(logger.level, logging.WARNING))
    tagged = logging.Formatter(
        f"%(asctime)s [rank {ctx.rank}] %(levelname)-7s %(message)s", "%H:%M:%S"
    )
    for handler in logger.handlers:
        handler.setFormatter(tagged)
