"""The throughput section of benchmarks/gpu_check.py: foxhunt's training samples/s at NVIDIA
DeepLearningExamples' TFT electricity configuration, beside NVIDIA's published A100 figures,
and foxhunt vs pytorch-forecasting at the reference shape on the same card, with the models,
batches and trainer of benchmarks/throughput.py."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any

import torch

from _bench_models import FoxhuntRunner, PFRunner, Trainer, load_pf, synthetic_batches
from _gpu_sizes import Sizes
from _gpu_steps import build, timed
from foxhunt.bench.memory import random_batch
from foxhunt.task import batch_loss

#: NVIDIA's published training throughput (items/s) of its TFT on electricity, one A100 80GB
#: (DGX A100), batch 1024 per GPU, PyTorch 21.06 NGC container, averaged over a training epoch
#: (data loading included): PyTorch/Forecasting/TFT/README.md, "Training performance: NVIDIA
#: DGX A100 (8x A100 80GB)". Its mixed precision is apex AMP O2 (fp16, dynamic loss scale).
NVIDIA_A100 = {"tf32": 10173.0, "amp": 13703.0}
NVIDIA_SOURCE = (
    "NVIDIA DeepLearningExamples PyTorch/Forecasting/TFT/README.md, DGX A100 (A100 80GB), "
    "1 GPU, batch 1024, electricity: TF32 10173 items/s, mixed precision (fp16) 13703 items/s"
)
#: each precision: its words, autocast dtype (None: fp32) and whether TF32 matmuls are on
PRECISIONS = {
    "tf32": ("fp32, TF32 matmuls", None, True),
    "fp16": ("AMP fp16 + GradScaler", torch.float16, False),
    "bf16": ("AMP bf16", torch.bfloat16, False),
}


@contextlib.contextmanager
def _tf32(enabled: bool) -> Iterator[None]:
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def _train_timed(
    sizes: Sizes, batch: Any, dtype: torch.dtype | None, device: torch.device, deadline: float
) -> tuple[list[float], float]:
    """A fresh electricity model trained on ``batch`` (autocast to ``dtype``, fp16 with a
    grad scaler): the timed steps' seconds (at least one: the deadline stops it only after
    three) and the last loss; the model dies on return."""
    cfg = sizes.dle_config
    torch.manual_seed(0)
    model = build(cfg).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=dtype is torch.float16)

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        amp = dtype is not None
        with torch.autocast(device.type, dtype=dtype or torch.float32, enabled=amp):
            loss = batch_loss(model, batch, cfg.quantiles)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss

    times: list[float] = []
    loss = torch.tensor(float("nan"))
    for i in range(sizes.dle_warmup + sizes.dle_steps):
        elapsed, loss = timed(step, device)
        if i >= sizes.dle_warmup:
            times.append(elapsed)
        if time.monotonic() > deadline and len(times) >= 3:
            break
    return times, float(loss.detach())


def dle_electricity(sizes: Sizes, device: torch.device, deadline: float) -> list[dict[str, Any]]:
    """foxhunt's training step (AdamW, as foxhunt trains) at the electricity config per
    precision: median step time and samples/s on one random batch of that shape."""
    batch_size = sizes.dle_batch
    batch = random_batch(sizes.dle_config, batch_size, device=device)
    rows = []
    for name, (words, dtype, tf32) in PRECISIONS.items():
        row: dict[str, Any] = {"precision": name, "how": words, "batch_size": batch_size}
        if time.monotonic() > deadline:
            rows.append({**row, "status": "skipped", "error": "time"})
            continue
        try:
            with _tf32(tf32):
                times, final_loss = _train_timed(sizes, batch, dtype, device, deadline)
        except RuntimeError as err:  # e.g. fp16 LSTM on a CPU's oneDNN
            rows.append({**row, "status": "unsupported", "error": str(err)[:300]})
            continue
        step = statistics.median(times)
        nvidia = NVIDIA_A100["amp" if dtype else "tf32"]
        rows.append(
            {
                **row,
                "status": "ok",
                "steps": len(times),
                "step_ms": 1e3 * step,
                "samples_per_s": batch_size / step,
                "final_loss": final_loss,
                "nvidia_a100_items_per_s": nvidia,
                "vs_nvidia_a100": batch_size / step / nvidia,
            }
        )
    return rows


def _load_pf() -> tuple[Any, str | None]:
    """benchmarks/_pf_tft.py, or None and why: an import that breaks for another reason than
    a missing package (versions on the card's image) skips the comparison too."""
    try:
        pf = load_pf()
    except Exception as err:
        return None, f"pytorch-forecasting failed to import ({type(err).__name__}: {err})"[:300]
    return pf, None if pf is not None else "pytorch-forecasting does not import: skipped"


def reference_vs_pf(sizes: Sizes, device: torch.device, deadline: float) -> dict[str, Any]:
    """Both libraries' fp32 training steps at the reference shape on ``device``, rounds
    alternating them (benchmarks/throughput.py's Trainer); pytorch-forecasting skipped,
    saying why, when it does not import or fails its first step there."""
    shape = sizes.ref_shape
    pf, pf_missing = _load_pf()
    batches = synthetic_batches(shape, count=4, seed=0)
    trainers = [Trainer(FoxhuntRunner(shape, seed=0), batches, lr=1e-3, device=device)]
    if pf is not None:
        try:
            theirs = Trainer(PFRunner(shape, seed=0, pf=pf), batches, lr=1e-3, device=device)
            theirs.step()  # fails here rather than halfway through the rounds
            trainers.insert(0, theirs)
        except Exception as err:
            pf_missing = f"pytorch-forecasting failed on {device} ({type(err).__name__}: {err})"
            pf_missing = pf_missing[:300]
    steps: dict[str, list[float]] = {t.runner.name: [] for t in trainers}
    for round_ in range(sizes.ref_rounds):
        if round_ and time.monotonic() > deadline:
            break
        for trainer in trainers if round_ % 2 == 0 else trainers[::-1]:
            warmup = sizes.ref_warmup if round_ == 0 else 1
            steps[trainer.runner.name] += trainer.timed_steps(warmup, sizes.ref_steps).seconds
    medians = {name: statistics.median(s) for name, s in steps.items()}
    result: dict[str, Any] = {
        "shape": {k: v for k, v in vars(shape).items() if k != "quantiles"},
        "libraries": {
            name: {
                "step_ms": 1e3 * m,
                "samples_per_s": shape.batch_size / m,
                "steps": len(steps[name]),
            }
            for name, m in medians.items()
        },
        "pf_missing": pf_missing,
    }
    if "pytorch-forecasting" in medians:
        result["pf_over_foxhunt"] = medians["pytorch-forecasting"] / medians["foxhunt"]
    return result


def throughput(sizes: Sizes, device: torch.device, limit_s: float) -> dict[str, Any]:
    """The NVIDIA electricity rows first (half the time at most), then the comparison; an
    error in the comparison is recorded beside the rows, not instead of them."""
    start = time.monotonic()
    dle = dle_electricity(sizes, device, start + 0.45 * limit_s)
    try:
        ref = reference_vs_pf(sizes, device, start + 0.85 * limit_s)
        fox = ref["libraries"]["foxhunt"]
        versus = f"foxhunt {fox['samples_per_s']:.0f}/s, " + (
            f"pytorch-forecasting {ref['pf_over_foxhunt']:.2f}x foxhunt's step time"
            if "pf_over_foxhunt" in ref
            else str(ref["pf_missing"])
        )
    except Exception as err:
        ref = {"error": f"{type(err).__name__}: {err}"[:500]}
        versus = f"error: {ref['error'][:150]}"
    ok_rows = [r for r in dle if r["status"] == "ok"]
    fp32 = next((r for r in ok_rows if r["precision"] == "tf32"), None)
    parts = [f"{r['precision']} {r['samples_per_s']:.0f}/s" for r in ok_rows]
    return {
        "status": "ok" if fp32 is not None and "error" not in ref else "failed",
        "dle_electricity": {
            "config": {
                k: getattr(sizes.dle_config, k)
                for k in ("hidden_size", "attention_heads", "lookback", "horizon", "num_past")
            },
            "rows": dle,
            "nvidia": NVIDIA_SOURCE,
        },
        "reference": ref,
        "summary": f"electricity b{sizes.dle_batch} samples/s: {', '.join(parts) or 'none'} "
        f"(NVIDIA A100: TF32 {NVIDIA_A100['tf32']:.0f}, AMP {NVIDIA_A100['amp']:.0f}); "
        f"reference b{sizes.ref_shape.batch_size}: {versus}",
    }
