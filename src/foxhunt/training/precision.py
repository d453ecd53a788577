"""Mixed precision: what a run's ``precision`` means on its device, decided before training.

``fp32`` runs no autocast. ``bf16`` is autocast to bfloat16 on CUDA (GPUs that support it) and
on CPUs that can run the TFT's ops in bfloat16: oneDNN's bf16 LSTM needs AVX-512 BF16 or AMX
(Intel Sapphire Rapids, AMD Zen 4 and newer); on an AVX2-only CPU it fails deep inside oneDNN
("could not create a primitive descriptor"), so a small probe decides once per process and the
run stops before it starts, with a line that says why. ``fp16`` is CUDA autocast with a
gradient scaler; CPU autocast has no fp16 path worth using, so it is refused there.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import torch
from torch import nn

from foxhunt.errors import ConfigError


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The autocast dtype ``precision`` means on ``device`` (None: plain fp32).

    Raises ConfigError naming the flag when the device cannot run it."""
    if precision == "fp32":
        return None
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    if device.type == "cuda":
        if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
            raise ConfigError(
                f"--precision bf16: {torch.cuda.get_device_name(device)} has no bfloat16 "
                "support; use --precision fp16 or fp32"
            )
        return dtype
    if device.type != "cpu" or dtype != torch.bfloat16:
        raise ConfigError(
            f"--precision {precision}: autocast to {precision} runs on CUDA only; on "
            f"{device.type} use --precision bf16 (CPUs with AVX-512 BF16 or AMX) or fp32"
        )
    problem = cpu_bf16_problem()
    if problem is not None:
        raise ConfigError(
            "--precision bf16: this CPU cannot run the model in bfloat16 (oneDNN's bf16 LSTM "
            f"needs AVX-512 BF16 or AMX; it said: {problem}); use --precision fp32"
        )
    return dtype


def autocast(
    device: torch.device, dtype: torch.dtype | None
) -> contextlib.AbstractContextManager[Any]:
    """The autocast context of ``autocast_dtype``'s answer (a no-op for None)."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


@functools.cache
def cpu_bf16_problem() -> str | None:
    """Why this CPU cannot run an LSTM and a Linear layer under bf16 autocast, forward and
    backward (None: it can). Honours ``ONEDNN_MAX_CPU_ISA``, which is how CI emulates an
    AVX2-only CPU on a newer one."""
    with torch.random.fork_rng():  # the caller's RNG stream stays as it was
        torch.manual_seed(0)
        lstm, linear = nn.LSTM(8, 8, batch_first=True), nn.Linear(8, 2)
        x = torch.randn(2, 3, 8)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out, _ = lstm(x)
            loss = linear(out).float().sum()
        loss.backward()
    except RuntimeError as err:
        lines = str(err).strip().splitlines()
        return lines[0] if lines else type(err).__name__
    return None
