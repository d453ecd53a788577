"""The in-process sections of benchmarks/gpu_check.py: bf16 autocast, the fused VSN op and the
memory profiler. Each takes its sizes and a device and returns a JSON-ready dict with a
``status`` ("ok", "failed", "unsupported") and a one-line ``summary`` for the markdown table;
the runner in gpu_check.py times them and turns an exception into status "error"."""

from __future__ import annotations

import copy
import logging
import math
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from _gpu_data import training_batches
from _gpu_memcheck import cross_check
from _gpu_sizes import Sizes
from _gpu_steps import build, timed
from foxhunt.bench.memory import random_batch
from foxhunt.memory.profiler import MemoryProfiler
from foxhunt.model.reference import (
    ReferenceVariableSelectionNetwork,
    copy_fast_to_reference,
    copy_reference_to_fast,
)
from foxhunt.model.variable_selection import VariableSelectionNetwork
from foxhunt.task import batch_loss

MiB = 1 << 20


def amp_bf16(
    sizes: Sizes, device: torch.device, parquet: Path | None, limit_s: float
) -> dict[str, Any]:
    """fp32 vs bf16 autocast: two copies of one model trained on the same batches (real
    windows with ``parquet``) with the same dropout masks, steps interleaved (ABBA) so that
    drift hits both alike; stops early, saying so, when the section's time runs short."""
    deadline = time.monotonic() + 0.85 * limit_s
    total = sizes.amp_warmup + sizes.amp_steps
    data = training_batches(
        sizes.amp_config, sizes.amp_batch, total, parquet=parquet, device=device
    )
    cfg = data.config
    torch.manual_seed(0)
    base = build(cfg).to(device).train()
    # The first loss says nothing (the baseline head's output layer starts at zero, so both
    # precisions give the baseline's loss exactly): the gradients at the same weights do.
    # The bf16 one first, on a throwaway copy: some CPUs cannot run it.
    try:
        bf16_grad = _first_gradient(base, data.at(0), cfg.quantiles, device, bf16=True)
    except RuntimeError as err:  # e.g. oneDNN without bf16 LSTM support on AVX2-only CPUs
        return {
            "status": "unsupported",
            "error": str(err)[:300],
            "summary": f"bf16 autocast unsupported on {device}",
        }
    fp32_grad = _first_gradient(base, data.at(0), cfg.quantiles, device, bf16=False)
    cosine = float(torch.nn.functional.cosine_similarity(fp32_grad, bf16_grad, dim=0))

    def make_step(bf16: bool) -> Callable[[int], float]:
        model = copy.deepcopy(base)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step(i: int) -> float:
            torch.manual_seed(1000 + i)  # the same dropout masks in both precisions
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = batch_loss(model, data.at(i), cfg.quantiles)
            loss.backward()
            optimizer.step()
            return float(loss.item())

        return step

    steps = {"fp32": make_step(False), "bf16": make_step(True)}
    losses: dict[str, list[float]] = {name: [] for name in steps}
    times: dict[str, list[float]] = {name: [] for name in steps}
    for i in range(total):
        if i > sizes.amp_warmup and time.monotonic() > deadline:
            break
        for name in list(steps) if i % 2 else list(steps)[::-1]:
            elapsed, loss = timed(partial(steps[name], i), device)
            losses[name].append(loss)
            if i >= sizes.amp_warmup:
                times[name].append(elapsed)
    done = len(losses["fp32"])
    rel = [
        abs(b - a) / max(abs(a), 1e-12) for a, b in zip(losses["fp32"], losses["bf16"], strict=True)
    ]
    tail = min(sizes.amp_tail, done)
    means = {k: statistics.fmean(v[-tail:]) for k, v in losses.items()}
    tail_rel = abs(means["bf16"] - means["fp32"]) / max(abs(means["fp32"]), 1e-12)
    fp32_ms, bf16_ms = (1e3 * statistics.median(times[k]) for k in ("fp32", "bf16"))
    finite = all(math.isfinite(x) for x in losses["fp32"] + losses["bf16"])
    agree = finite and cosine >= sizes.amp_grad_cosine and tail_rel <= sizes.amp_tolerance
    cut = "" if done == total else f" (cut at {done} of {total}: time)"
    return {
        "status": "ok" if agree else "failed",
        "data": data.label,
        "batch_size": sizes.amp_batch,
        "config": {
            "hidden_size": cfg.hidden_size,
            "lookback": cfg.lookback,
            "horizon": cfg.horizon,
            "num_past": cfg.num_past,
        },
        "steps": done,
        "steps_planned": total,
        "timed_steps": len(times["fp32"]),
        "fp32_step_ms": fp32_ms,
        "bf16_step_ms": bf16_ms,
        "speedup_fp32_over_bf16": fp32_ms / bf16_ms,
        "losses": losses,
        "first_step_rel_diff": rel[0],
        "last_step_rel_diff": rel[-1],
        "max_rel_diff": max(rel),
        "tail_steps": tail,
        "tail_mean_loss": means,
        "tail_mean_rel_diff": tail_rel,
        "first_gradient_cosine": cosine,
        "least_gradient_cosine": sizes.amp_grad_cosine,
        "tolerance": sizes.amp_tolerance,
        "summary": f"fp32 {fp32_ms:.1f} ms, bf16 {bf16_ms:.1f} ms per step "
        f"({fp32_ms / bf16_ms:.2f}x), batch {sizes.amp_batch}; first gradients' cosine "
        f"{cosine:.4f}; loss rel. diff, mean of the last {tail} of {done} steps "
        f"{tail_rel:.1e}{cut}",
    }


def _first_gradient(
    model: torch.nn.Module, batch: Any, quantiles: Any, device: torch.device, *, bf16: bool
) -> Tensor:
    """Every parameter's gradient of one loss, flattened, on a copy of ``model`` (the same
    dropout masks for both precisions)."""
    model = copy.deepcopy(model)
    torch.manual_seed(999)
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        batch_loss(model, batch, quantiles).backward()
    grads = [
        (p.grad if p.grad is not None else torch.zeros_like(p)).float().flatten()
        for p in model.parameters()
    ]
    return torch.cat(grads)


def _max_rel(a: Tensor, b: Tensor) -> float:
    """max |a - b| / max |b|: a difference on the tensor's own scale."""
    a, b = a.detach(), b.detach()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def fused_vsn(sizes: Sizes, device: torch.device) -> dict[str, Any]:
    """The fused VariableSelectionNetwork against the plain per-variable reference on
    ``device`` (eval mode: the two draw dropout masks differently), outputs and gradients."""
    n, d, h = sizes.vsn_variables, sizes.vsn_variable_size, sizes.vsn_hidden
    kwargs: dict[str, Any] = {"variable_size": d, "hidden_size": h, "dropout": 0.1}
    torch.manual_seed(0)
    ref = ReferenceVariableSelectionNetwork(n, context_size=h, **kwargs).to(device).eval()
    fast = VariableSelectionNetwork(n, context_size=h, **kwargs).to(device).eval()
    copy_reference_to_fast(ref, fast)
    g = torch.Generator().manual_seed(1)
    real = torch.randn(sizes.vsn_batch, sizes.vsn_steps, n, generator=g).to(device)
    context = torch.randn(sizes.vsn_batch, h, generator=g).to(device)
    grad_out = torch.randn(sizes.vsn_batch, sizes.vsn_steps, h, generator=g).to(device)
    grad_w = torch.randn(sizes.vsn_batch, sizes.vsn_steps, n, generator=g).to(device)

    def run(module: torch.nn.Module) -> tuple[Tensor, Tensor, Tensor]:
        module.zero_grad(set_to_none=True)
        x = real.detach().requires_grad_()
        out, weights = module(x, None, context)
        torch.autograd.backward([out, weights], [grad_out, grad_w])
        assert x.grad is not None
        return out.detach(), weights.detach(), x.grad

    out_ref, w_ref, x_ref = run(ref)
    out_fast, w_fast, x_fast = run(fast)
    # the fused module's gradients, moved into the reference's parameter layout
    holder, fast_as_ref = copy.deepcopy(fast), copy.deepcopy(ref)
    with torch.no_grad():
        for p, q in zip(fast.parameters(), holder.parameters(), strict=True):
            assert p.grad is not None
            q.copy_(p.grad)
    copy_fast_to_reference(holder, fast_as_ref)
    fast_grads = dict(fast_as_ref.named_parameters())
    param_diffs = {
        name: _max_rel(fast_grads[name], p.grad)
        for name, p in ref.named_parameters()
        if p.grad is not None
    }
    worst = max(param_diffs, key=param_diffs.__getitem__)
    diffs = {
        "output": _max_rel(out_fast, out_ref),
        "weights": _max_rel(w_fast, w_ref),
        "input_grad": _max_rel(x_fast, x_ref),
        "param_grad": param_diffs[worst],
    }
    out_abs = float((out_fast - out_ref).abs().max())
    times: dict[str, float] = {}
    for name, module in (("fused", fast), ("reference", ref)):
        times[name] = 1e3 * statistics.median(
            timed(partial(run, module), device)[0] for _ in range(sizes.vsn_reps)
        )
    ok = max(diffs.values()) <= sizes.vsn_tolerance
    return {
        "status": "ok" if ok else "failed",
        "variables": n,
        "rows": sizes.vsn_batch * sizes.vsn_steps,
        "variable_size": d,
        "hidden_size": h,
        "max_rel_diff": diffs,
        "output_max_abs_diff": out_abs,
        "worst_param_grad": worst,
        "tolerance": sizes.vsn_tolerance,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "fused_ms": times["fused"],
        "reference_ms": times["reference"],
        "summary": f"{n} variables x {sizes.vsn_batch * sizes.vsn_steps} rows: max rel. diff "
        f"{max(diffs.values()):.1e} (tol {sizes.vsn_tolerance:g}); fwd+bwd fused "
        f"{times['fused']:.1f} ms, reference {times['reference']:.1f} ms",
    }


class _Warnings(logging.Handler):
    """Keeps the warnings a logger emits."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def profiler(sizes: Sizes, device: torch.device) -> dict[str, Any]:
    """MemoryProfiler on ``device``: snapshots every step of a clean run and of one with a
    planted leak (a tensor kept alive per step); only the leaky run may warn. Then one
    snapshot checked against the allocator's counters and NVML (_gpu_memcheck)."""
    cfg = sizes.amp_config
    if device.type == "cuda":
        # the peak counter otherwise holds the earlier sections' (the throughput section's
        # batch 1024) while the runner's empty_cache shrank what is reserved: the snapshot's
        # peak would exceed its reserved memory, a failure that says nothing of the profiler
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(0)
    model = build(cfg).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch = random_batch(cfg, sizes.amp_batch, device=device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        batch_loss(model, batch, cfg.quantiles).backward()
        optimizer.step()

    step()  # Adam's state and the allocator's pools exist before the measured epochs

    def epoch(leak_mb: int) -> tuple[MemoryProfiler, list[str]]:
        prof = MemoryProfiler(device, log_every=1, leak_threshold_mb=sizes.leak_threshold_mb)
        handler, logger = _Warnings(), logging.getLogger("foxhunt.memory")
        logger.addHandler(handler)
        kept: list[Tensor] = []  # the leak: what a loop appending tensors to a list holds
        try:
            prof.on_epoch_start()
            for _ in range(sizes.leak_steps):
                step()
                if leak_mb:  # ones, not empty: on CPU only touched pages count in the RSS
                    kept.append(torch.ones(leak_mb * MiB // 4, device=device))
                prof.on_step_end()
            prof.on_epoch_end()
        finally:
            logger.removeHandler(handler)
        return prof, handler.messages

    clean, clean_warnings = epoch(0)
    leaky, leaky_warnings = epoch(sizes.leak_mb)
    readings = cross_check(leaky.snapshot(), device)
    events = clean.events + leaky.events
    backends = sorted({e["backend"] for e in events})
    leak_events = [e for e in leaky.events if e["event"] == "memory_leak_warning"]
    growth = [e["growth_mb"] for e in leaky.events if e["event"] == "memory_step"]
    clean_growth = [e["growth_mb"] for e in clean.events if e["event"] == "memory_step"]
    ok = (
        bool(leak_events)
        and bool(leaky_warnings)
        and not clean_warnings
        and backends == [device.type]
        and readings["ok"]
    )
    return {
        "status": "ok" if ok else "failed",
        "backends": backends,
        "total_mb": events[0]["total_mb"],
        "planted_mb_per_step": sizes.leak_mb,
        "threshold_mb": sizes.leak_threshold_mb,
        "leak_warned_at_step": leak_events[0]["step"] if leak_events else None,
        "leak_warning": leaky_warnings[0] if leaky_warnings else None,
        "clean_run_warnings": clean_warnings,
        "clean_max_growth_mb": max(clean_growth),
        "leaky_growth_mb": growth,
        "snapshots": [
            {k: e.get(k) for k in ("event", "backend", "used_mb", "peak_mb", "reserved_mb")}
            for e in leaky.events
        ],
        "summary": f"{len(events)} {'/'.join(backends)} snapshots; planted "
        f"{sizes.leak_mb} MiB/step: "
        + (f"warned at step {leak_events[0]['step']}" if leak_events else "no warning")
        + f"; clean run {'warned' if clean_warnings else 'silent'}; {readings['summary']}"
        + ("" if readings["ok"] else f" ({'; '.join(readings['problems'])})"),
        "readings": readings,
    }
