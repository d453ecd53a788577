"""Does the network learn what is in the data? Planted markets against their own oracle.

    .venv/bin/python benchmarks/planted_learning.py --runs /tmp/pl                # 3 seeds, 240 days
    .venv/bin/python benchmarks/planted_learning.py --runs /tmp/pl --market none  # no driver
    .venv/bin/python benchmarks/planted_learning.py --runs /tmp/pl -- --epochs 10 --lr 3e-3

Per seed (of the market and of training alike): `foxhunt planted` writes a planted-signal
market (data/planted/; `--market all` plants every driver on two symbols, `default` the
built-in bars' drivers on one, `none` persistent volatility only), `foxhunt train` trains the
default model on it (`--max-gap 10min`, flags after `--` passed on), and its metrics.json
says: the TFT's mean quantile loss, the best baseline's, the oracle's from the bars (the
bound) and from the latent state (the floor), the share of the gap between the best baseline
and the bound that the TFT closed with its 95% day-block interval, the Diebold-Mariano
p-value of the TFT against the best baseline (one-sided: the TFT better), the TFT minus the best
baseline with its 95% day-block interval (on the market with no driver the TFT must not be worse
beyond it), whether the gate kept the initial weights (or which base's head was served
instead, `--head-fallback`), and the rank
of each planted driver's inputs in their selection network. A run folder that already holds
metrics.json is read back, not trained again.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: the inputs that show each driver, by selection network
DRIVER_INPUTS = {
    "volume_lead": ("past", ("log_volume", "volume_vs_minute", "rel_volume")),
    "event": ("future", ("weekday_sin", "weekday_cos", "minute_sin", "minute_cos")),
    "regime": ("past", ("log_volume", "volume_vs_minute", "log_range", "realized_vol")),
    "cross_lead": ("past", ("cross_",)),
}
MARKETS = {
    "default": ["--symbols", "ES"],
    "all": ["--symbols", "ES,NQ", "--cross-lead", "0.5"],
    "none": ["--volume-lead", "0", "--event-size", "1", "--regime-size", "1"],
}
PLANTED = {"default": ("volume_lead", "event", "regime"), "all": tuple(DRIVER_INPUTS), "none": ()}


def foxhunt(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "foxhunt", *args], check=True)


def _kept(training: dict[str, Any]) -> str:
    """ "no" (trained weights), "yes" (the gate kept the head), or the base whose head was
    served instead (training.head_fallback)."""
    served = training.get("served_head")
    if isinstance(served, str):
        return f"{served} head"
    return "yes" if training.get("kept_initial") else "no"


def run_seed(root: Path, market: str, seed: int, days: int, extra: list[str]) -> dict[str, Any]:
    bars, run = root / f"{market}_{seed}.parquet", root / f"{market}_{seed}"
    if not (run / "metrics.json").exists():
        foxhunt("planted", str(bars), "--days", str(days), "--seed", str(seed), "--overwrite",
                *MARKETS[market])  # fmt: skip
        started = time.perf_counter()
        foxhunt("train", "--parquet-file", str(bars), "--max-gap", "10min", "--seed", str(seed),
                "--output-dir", str(run), "--overwrite", "--no-report", *extra)  # fmt: skip
        print(f"seed {seed}: trained in {time.perf_counter() - started:.0f} s", flush=True)
    return json.loads((run / "metrics.json").read_text())


def ranks(metrics: dict[str, Any], market: str) -> dict[str, int | None]:
    """Each planted driver's best rank (1 = top) among its network's inputs: over every
    window, but the cross lead over the followers' (the symbols after the first, which leads;
    the leader's windows have nothing to find in the cross inputs)."""
    out: dict[str, int | None] = {}
    each = metrics.get("importance_by_symbol", {})
    flags = MARKETS[market]
    symbols = flags[flags.index("--symbols") + 1].split(",") if "--symbols" in flags else []
    for driver in PLANTED[market]:
        network, prefixes = DRIVER_INPUTS[driver]
        tables = [metrics["importance"]]
        if driver == "cross_lead" and each:
            tables = [each[s] for s in symbols[1:] if s in each]
        hits = [
            i + 1
            for table in tables
            for i, row in enumerate(table[network]["inputs"])
            if row["name"].startswith(prefixes)
        ]
        out[driver] = min(hits) if hits else None
    return out


def window_loss(frame: pd.DataFrame, prefix: str, levels: list[float]) -> np.ndarray:
    """Each test row's quantile loss in bp: the pinball loss averaged over the levels (the
    tables' mean QL is its mean)."""
    y = frame["realized_bp"].to_numpy()
    total = np.zeros(len(frame))
    for level in levels:
        e = y - frame[f"{prefix}q{level:g}"].to_numpy()
        total += np.maximum(level * e, (level - 1) * e)
    return total / len(levels)


def difference(run: Path, best: str, resamples: int = 2000) -> str:
    """TFT minus the best baseline, mean QL in bp, with its 95% day-block bootstrap interval
    (the test rows resampled by New York day): the market with no driver's check."""
    frame = pd.read_parquet(run / "test_forecasts.parquet")
    levels = sorted(float(c[1:]) for c in frame.columns if c.startswith("q") and ":" not in c)
    diff = window_loss(frame, "", levels) - window_loss(frame, f"{best}:", levels)
    days = pd.DatetimeIndex(frame["origin"]).tz_convert("America/New_York").date
    _, inverse = np.unique(days, return_inverse=True)
    sums, counts = np.bincount(inverse, weights=diff), np.bincount(inverse)
    draws = np.random.default_rng(0).integers(0, len(sums), size=(resamples, len(sums)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return f"{diff.mean():+.4f} [{low:+.4f}, {high:+.4f}]"


def row(seed: int, metrics: dict[str, Any], market: str, run: Path) -> str:
    oracle = metrics["oracle"]
    best = oracle["best_baseline"]
    dm = metrics["differences"]["dm"].get(best, {})
    p = dm.get("pvalue", float("nan"))  # two-sided; one-sided for "the TFT is better":
    p = p / 2 if dm.get("mean", 0.0) < 0 else 1 - p / 2
    cells = [
        str(seed),
        f"{metrics['test']['mean_quantile_loss']:.4f}",
        f"{best} {oracle['best_baseline_loss']:.4f}",
        f"{oracle['metrics']['oracle_bars']['mean_quantile_loss']:.4f}",
        f"{oracle['metrics']['oracle_latent']['mean_quantile_loss']:.4f}",
        f"{100 * oracle['gap_closed']:.0f}%"
        + (
            f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"
            if (ci := oracle.get("gap_closed_ci95"))
            else ""
        )
        + (
            " (" + ", ".join(f"{k} {100 * v:.0f}%" for k, v in each.items()) + ")"
            if (each := oracle.get("gap_closed_by_symbol"))
            else ""
        ),
        f"{p:.4f}",
        difference(run, best),
        _kept(metrics["training"]),
        ", ".join(f"{k} {v}" for k, v in ranks(metrics, market).items()) or "-",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--market", choices=sorted(MARKETS), default="default")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--days", type=int, default=240)
    parser.add_argument("extra", nargs="*", help="flags for foxhunt train (after --)")
    args = parser.parse_args()
    args.runs.mkdir(parents=True, exist_ok=True)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.processor())  # fmt: skip
    print(f"# planted market {args.market!r}, {args.days} days; foxhunt train --max-gap 10min "
          f"{' '.join(args.extra)}; {cpu}, {time.strftime('%Y-%m-%d %H:%M')}")  # fmt: skip
    print("| seed | TFT | best baseline | oracle (bars) | oracle (latent) | gap closed | "
          "DM p (TFT better) | TFT - best [95%] | kept initial | driver ranks |")  # fmt: skip
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    shares = []
    for seed in args.seeds:
        metrics = run_seed(args.runs, args.market, seed, args.days, args.extra)
        run = args.runs / f"{args.market}_{seed}"
        print(row(seed, metrics, args.market, run), flush=True)
        shares.append(metrics["oracle"]["gap_closed"])
    print(f"\nmean gap closed over {len(shares)} seeds: {100 * sum(shares) / len(shares):.0f}%")


if __name__ == "__main__":
    main()
