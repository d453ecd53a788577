"""Time one training step of the TFT at the CPU reference config.

forward + quantile loss (7 quantiles, ``foxhunt.task.batch_loss`` as the trainer takes it) +
backward + Adam step; batch 32, lookback 64, horizon 8, hidden 64, variable_hidden_size 16,
4 heads, 220 past / 10 future / 5 static, the default output head ("baseline"). The model is
built as a run builds it (``build_model`` + ``apply_model_transforms``).

    .venv/bin/python benchmarks/model_step.py [--steps 10] [--threads 2] [--profile]
        [--compare-reference] [--quick]

``--compare-reference`` also times, interleaved step by step, the same model whose variable
selection networks are the plain per-variable ``reference.py`` version: a like-for-like
ratio even when other jobs share the machine. ``--compile`` times the same model (same
weights) under ``torch.compile`` (inductor, CPU) the same way, after its first step (the
compile, cold unless inductor's cache holds it, in its own line), with dynamo's graph breaks
and the compiled model's inference output against the eager one's (issue 40, item 2). ``--quick`` steps a tiny model twice at batch 4
(the smoke test, tests/benchmarks/test_model_step_smoke.py; its timings mean nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable

import torch

from foxhunt import TemporalFusionTransformer, TFTBatch, TFTConfig, apply_model_transforms
from foxhunt.bench.memory import random_batch
from foxhunt.model.factory import DEFAULT_MODEL, build_model
from foxhunt.model.reference import ReferenceVariableSelectionNetwork, copy_fast_to_reference
from foxhunt.model.variable_selection import VariableSelectionNetwork
from foxhunt.task import batch_loss

REFERENCE = TFTConfig(
    num_static=5,
    num_past=220,
    num_future=10,
    hidden_size=64,
    variable_hidden_size=16,
    attention_heads=4,
    lookback=64,
    horizon=8,
    quantiles=(0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.98),
    dropout=0.1,
)
#: ``--quick``: the same kinds of inputs and head at a size that steps in milliseconds
QUICK = dataclasses.replace(
    REFERENCE, num_past=6, num_future=2, hidden_size=8, variable_hidden_size=4, lookback=8
)


def build(cfg: TFTConfig) -> TemporalFusionTransformer:
    """The model a run trains from ``cfg``: built, then its transforms applied."""
    return apply_model_transforms(build_model(DEFAULT_MODEL, cfg), cfg)


def with_reference_vsns(model: TemporalFusionTransformer) -> TemporalFusionTransformer:
    """The same model (same weights) with plain per-variable selection networks."""
    cfg = model.config
    kwargs = {
        "variable_size": cfg.variable_hidden_size,
        "hidden_size": cfg.hidden_size,
        "dropout": cfg.dropout,
    }
    specs = {
        "static_vsn": (cfg.num_static, cfg.static_cardinalities, None),
        "past_vsn": (cfg.num_past, (), cfg.hidden_size),
        "future_vsn": (cfg.num_future, (), cfg.hidden_size),
    }
    clone = build_model(DEFAULT_MODEL, cfg)
    clone.load_state_dict(model.state_dict())
    for name, (n, cards, context) in specs.items():
        fast = getattr(clone, name)
        if isinstance(fast, VariableSelectionNetwork):
            ref = ReferenceVariableSelectionNetwork(n, cards, context_size=context, **kwargs)
            copy_fast_to_reference(fast, ref)
            setattr(clone, name, ref)
    return apply_model_transforms(clone, cfg)  # after the swap: it may wrap the new segments


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="print a torch.profiler table")
    parser.add_argument("--compare-reference", action="store_true")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile")
    parser.add_argument(
        "--quick", action="store_true", help="a tiny model, batch 4, 2 steps: a smoke test"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.batch_size, args.steps, args.warmup = 4, 2, 0

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = QUICK if args.quick else REFERENCE
    batch = random_batch(cfg, args.batch_size)
    model = build(cfg).train()
    models = {"fused": model}
    if args.compare_reference:
        models["reference"] = with_reference_vsns(model).train()
    steps = {name: make_step(m, batch, cfg) for name, m in models.items()}
    if args.compile:
        steps["compiled"] = compiled_step(model, batch, cfg)
    times = time_steps(steps, args.warmup, args.steps)

    params = sum(p.numel() for p in model.parameters())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch_size}")
    print(f"parameters: {params:,}")
    for name, ts in times.items():
        ms = 1e3 * statistics.median(ts)
        print(
            f"{name}: median {ms:.1f} ms/step (min {1e3 * min(ts):.1f}, max {1e3 * max(ts):.1f})"
            f", {args.batch_size / (ms / 1e3):.1f} samples/s"
        )
    for name in ("reference", "compiled"):
        if name in times:
            ratio = statistics.median(times[name]) / statistics.median(times["fused"])
            print(f"{name} / fused: {ratio:.2f}x")

    if args.profile:
        with torch.profiler.profile(record_shapes=True) as prof:
            for _ in range(3):
                steps["fused"]()
        table = prof.key_averages(group_by_input_shape=True)
        print(table.table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=40))


def time_steps(
    steps: dict[str, Callable[[], float]], warmup: int, timed: int
) -> dict[str, list[float]]:
    """Seconds of each timed step per model, the models interleaved step by step."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(warmup):
        for step in steps.values():
            step()
    for _ in range(timed):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    return times


def compiled_step(
    model: TemporalFusionTransformer, batch: TFTBatch, cfg: TFTConfig
) -> Callable[[], float]:
    """`make_step` of a compiled copy of `model` (same weights), its first step run here:
    prints the compile's seconds, dynamo's graph breaks and the compiled inference output's
    largest difference from the eager model's."""
    from torch._dynamo.utils import counters  # dynamo's own tally of graph breaks

    twin = build(cfg)
    twin.load_state_dict(model.state_dict())
    compiled = torch.compile(twin)
    start = time.perf_counter()
    with torch.no_grad():
        eager_out = twin.eval()(batch).quantiles
        compiled_out = compiled(batch).quantiles  # the inference graph's compile
    inference_s = time.perf_counter() - start
    twin.train()
    step = make_step(compiled, batch, cfg)
    start = time.perf_counter()
    step()  # the training graph's compile, forward and backward
    training_s = time.perf_counter() - start
    breaks = dict(counters["graph_break"])
    error = (compiled_out - eager_out).abs().max().item()
    print(
        f"compile: inference {inference_s:.1f} s, training step {training_s:.1f} s; "
        f"graph breaks {sum(breaks.values())} {breaks or ''}; inference output "
        f"max |compiled - eager| {error:.1e}"
    )
    return step


def make_step(
    model: TemporalFusionTransformer, batch: TFTBatch, cfg: TFTConfig
) -> Callable[[], float]:
    """One training step: forward, quantile loss, backward, Adam."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        loss = batch_loss(model, batch, cfg.quantiles)
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


if __name__ == "__main__":
    main()
