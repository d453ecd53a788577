"""Time one training step of the TFT at the CPU reference config.

forward + quantile_loss (7 quantiles) + backward + Adam step; batch 32, lookback 64,
horizon 8, hidden 64, variable_hidden_size 16, 4 heads, 220 past / 10 future / 5 static.

    .venv/bin/python benchmarks/model_step.py [--steps 10] [--threads 2] [--profile]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from foxhunt import TemporalFusionTransformer, TFTBatch, TFTConfig, quantile_loss

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


def make_batch(cfg: TFTConfig, batch_size: int) -> TFTBatch:
    g = torch.Generator().manual_seed(0)
    return TFTBatch(
        static=torch.randn(batch_size, cfg.num_static, generator=g),
        past=torch.randn(batch_size, cfg.lookback, cfg.num_past, generator=g),
        future=torch.randn(batch_size, cfg.horizon, cfg.num_future, generator=g),
        target=torch.randn(batch_size, cfg.horizon, generator=g),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="print a torch.profiler table")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = REFERENCE
    model = TemporalFusionTransformer(cfg).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch = make_batch(cfg, args.batch_size)
    assert batch.target is not None
    target = batch.target

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        out = model(batch)
        loss = quantile_loss(out.quantiles, target, cfg.quantiles)
        loss.backward()
        optimizer.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    ms = 1e3 * statistics.median(times)
    params = sum(p.numel() for p in model.parameters())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch_size}")
    print(f"parameters: {params:,}")
    print(f"step: median {ms:.1f} ms (min {1e3 * min(times):.1f}, max {1e3 * max(times):.1f})")
    print(f"throughput: {args.batch_size / (ms / 1e3):.1f} samples/s")

    if args.profile:
        with torch.profiler.profile(record_shapes=True) as prof:
            for _ in range(3):
                step()
        table = prof.key_averages(group_by_input_shape=True)
        print(table.table(sort_by="self_cpu_time_total", row_limit=30, max_name_column_width=40))


if __name__ == "__main__":
    main()
