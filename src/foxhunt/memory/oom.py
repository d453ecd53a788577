"""Memory budgets from the command line, and what training does when the device runs out.

``--memory-budget`` takes a size (``512MB``, ``4GB``, ``4GiB``; KB/MB/GB/TB and KiB/MiB/GiB/TiB
all mean powers of 1024, as ``MemoryPlan.describe()`` and nvidia-smi print them) or ``auto``:
on CUDA the device's free memory plus what this process already holds. ``auto`` on CPU is
refused: the process shares RAM (and swap) with everything else on the machine, so no number
read at startup is a budget the run can count on; give a size instead.

An out-of-memory error during training ends with a message naming the flags that would fit;
with ``auto`` the run re-plans once for 80% of the memory free after emptying the cache and
carries on from the same batch: an error in forward or backward never reached the optimizer
or a callback, so nothing was updated and no checkpoint was being written (they are written
atomically anyway). An error inside ``optimizer.step`` (the trainer raises it as
:class:`OptimizerStepOutOfMemory`) may leave weights and optimizer state partly updated: that
run always ends with the message, before any callback could checkpoint the half-done step, so
the last checkpoint is the last complete step and ``--resume`` continues from it.
"""

from __future__ import annotations

import gc
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import torch

from foxhunt.errors import ConfigError, FoxhuntError

log = logging.getLogger("foxhunt.memory")

AUTO = "auto"
REPLAN_FRACTION = 0.8
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)

T = TypeVar("T")


class OutOfMemory(FoxhuntError):
    """Training ran out of device memory; the message says which flags would fit."""


class OptimizerStepOutOfMemory(torch.OutOfMemoryError):
    """Out of memory inside ``optimizer.step``: weights and optimizer state may be partly
    updated, so training cannot carry on from them (not even after re-planning)."""


@contextmanager
def optimizer_step_oom() -> Iterator[None]:
    """Around ``optimizer.step``: out of memory there is :class:`OptimizerStepOutOfMemory`."""
    try:
        yield
    except torch.OutOfMemoryError as error:
        raise OptimizerStepOutOfMemory(str(error)) from error


def parse_budget(text: str) -> float | str:
    """Bytes of ``512MB`` / ``4GB`` / ``4GiB`` / ``1073741824``, or ``"auto"``."""
    if text.strip().lower() == AUTO:
        return AUTO
    match = _SIZE.match(text)
    if match is None or float(match.group(1)) <= 0:
        raise ConfigError(
            f"--memory-budget {text!r}: give a positive size such as 512MB, 4GB or 4GiB, or auto"
        )
    return float(match.group(1)) * _UNITS[match.group(2).upper()]


def budget_bytes(budget: float | str, device: torch.device, fraction: float = 1.0) -> float:
    """The budget in bytes; ``auto`` reads the CUDA device (after emptying the cache)."""
    if budget != AUTO:
        return float(budget) * fraction
    if device.type != "cuda":
        raise ConfigError(
            "--memory-budget auto reads the free memory of a CUDA device; on CPU the RAM is "
            "shared with every other process, so give a size instead, e.g. --memory-budget 8GB"
        )
    gc.collect()
    torch.cuda.empty_cache()
    free, _ = torch.cuda.mem_get_info(device)
    return (free + torch.cuda.memory_allocated(device)) * fraction


def oom_message(error: BaseException, *, batch_size: int, budget: float | str | None) -> str:
    """What ran out, and the flags that would make the run fit."""
    smaller = max(1, batch_size // 2)
    hints = [
        "--memory-budget auto (plan checkpointing and micro-batches for the free memory)",
        "--use-gradient-checkpointing (recompute activations in backward)",
        f"--batch-size {smaller}",
    ]
    if budget not in (None, AUTO):
        hints[0] = f"a smaller --memory-budget than {float(budget) / (1 << 20):.0f}MB, or auto"
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    where = "during training"
    if isinstance(error, OptimizerStepOutOfMemory):
        where = "in the optimizer step (weights and optimizer state may be partly updated)"
    return (
        f"out of device memory {where} ({first}); the last complete checkpoint is "
        "intact (pass --resume to continue from it). Try one of: " + "; ".join(hints)
    )


def fit_with_oom_guard(
    fit: Callable[[], T],
    *,
    batch_size: int,
    budget: float | str | None,
    replan: Callable[[], None] | None = None,
) -> T:
    """Run ``fit``; on ``torch.OutOfMemoryError`` call ``replan`` once (``auto`` only, and not
    after a partly done optimizer step) and run ``fit`` again, else raise :class:`OutOfMemory`
    with a message naming the flags."""
    try:
        return fit()
    except torch.OutOfMemoryError as error:
        partial = isinstance(error, OptimizerStepOutOfMemory)
        if budget != AUTO or replan is None or partial:
            raise OutOfMemory(oom_message(error, batch_size=batch_size, budget=budget)) from error
        log.warning("out of memory (%s); re-planning once for a smaller budget", error)
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    replan()
    try:
        return fit()
    except torch.OutOfMemoryError as error:
        message = oom_message(error, batch_size=batch_size, budget=budget)
        raise OutOfMemory("after re-planning, still " + message) from error
