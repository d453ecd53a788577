"""Does the TFT beat the volatility baselines? Per seed, with a block-bootstrap interval.

    .venv/bin/python benchmarks/forecast_quality.py --seeds 0 1 2 --runs /tmp/fq   # ES bars
    .venv/bin/python benchmarks/forecast_quality.py --runs /tmp/fq -- --output direct

Trains one `foxhunt train` run per seed on the bars (`--max-gap 10min`, defaults otherwise,
flags after `--` passed on; a run folder already in `--runs` is reused) and scores its
`test_forecasts.parquet`: mean quantile loss of the TFT and of each baseline on the same rows,
and the difference TFT - baseline with a 95% interval from a block bootstrap over the test
days (windows of one day move together: their errors are correlated through the day's
volatility). A negative difference whose interval excludes 0 is a TFT that beats the baseline.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.backtest.stats import block_bootstrap
from foxhunt.task import pinball as pinball_loss

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ES_FUT_60d_5min.parquet"
BASELINES = ("realized_vol", "garch_t", "historical_quantiles")


def pinball(frame: pd.DataFrame, prefix: str, quantiles: list[float]) -> np.ndarray:
    """[rows] mean pinball loss over the quantiles of the forecaster whose columns start so."""
    realized = frame["realized_bp"].to_numpy()
    losses = [pinball_loss(frame[f"{prefix}q{q:g}"].to_numpy(), realized, q) for q in quantiles]
    return np.mean(losses, axis=0)


def quantile_levels(frame: pd.DataFrame) -> list[float]:
    return sorted(float(c[1:]) for c in frame.columns if c.startswith("q"))


def score(frame: pd.DataFrame, resamples: int) -> dict[str, dict[str, float]]:
    """Per baseline: losses of both, the mean difference and its interval."""
    quantiles = quantile_levels(frame)
    days = pd.DatetimeIndex(frame["origin"]).date
    tft = pinball(frame, "", quantiles)
    out = {}
    for name in BASELINES:
        if f"{name}:q{quantiles[0]:g}" not in frame:
            continue
        base = pinball(frame, f"{name}:", quantiles)
        ok = np.isfinite(base)
        diff = (tft - base)[ok]
        low, high = block_bootstrap(diff, days[ok], resamples)
        out[name] = {
            "tft": float(tft[ok].mean()),
            "baseline": float(base[ok].mean()),
            "diff": float(diff.mean()),
            "low": low,
            "high": high,
        }
    return out


def train(run: Path, data: Path, seed: int, extra: list[str]) -> None:
    if (run / "test_forecasts.parquet").is_file():
        return
    cmd = [sys.executable, "-m", "foxhunt", "train", "--parquet-file", str(data)]
    cmd += ["--max-gap", "10min", "--no-report", "--seed", str(seed), *extra]
    subprocess.run([*cmd, "--output-dir", str(run)], check=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--runs", type=Path, required=True, help="run folders: RUNS/seed<S>")
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("extra", nargs="*", help="flags for foxhunt train, after --")
    args = p.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"{args.data} not found: pass --data PATH (see ../shared/data/README.md)")
    print("seed | baseline | TFT QL | baseline QL | TFT - baseline (bp) | 95% block-bootstrap")
    print("--- | --- | ---: | ---: | ---: | ---")
    for seed in args.seeds:
        run = args.runs / f"seed{seed}"
        train(run, args.data, seed, args.extra)
        frame = pd.read_parquet(run / "test_forecasts.parquet")
        for name, s in score(frame, args.resamples).items():
            verdict = "beats" if s["high"] < 0 else "loses" if s["low"] > 0 else "tie"
            print(
                f"{seed} | {name} | {s['tft']:.4f} | {s['baseline']:.4f} | {s['diff']:+.4f} | "
                f"[{s['low']:+.4f}, {s['high']:+.4f}] ({verdict})"
            )


if __name__ == "__main__":
    main()
