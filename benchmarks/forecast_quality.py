"""Does the TFT beat the volatility baselines? Per seed, with a block-bootstrap interval.

    .venv/bin/python benchmarks/forecast_quality.py --seeds 0 1 2 --runs /tmp/fq   # ES bars
    .venv/bin/python benchmarks/forecast_quality.py --runs /tmp/fq -- --output direct

Trains one `foxhunt train` run per seed on the bars (`--max-gap 10min`, defaults otherwise,
flags after `--` passed on; a run folder already in `--runs` is reused) and scores its
`test_forecasts.parquet`: mean quantile loss of the TFT and of each baseline on the same rows,
and the difference TFT - baseline with a 95% interval from a block bootstrap over the test
days (windows of one day move together: their errors are correlated through the day's
volatility). A negative difference whose interval excludes 0 is a TFT that beats the baseline.
A second table per seed has every forecaster's mean loss, the Diebold-Mariano p-value of the TFT
against it and whether it is in the 90% model confidence set (`foxhunt.task.difference`, the
tests `train`, `evaluate` and `backtest` report).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.backtest.scoring import windows_of
from foxhunt.backtest.summary import differences
from foxhunt.task import pinball as pinball_loss
from foxhunt.task import window_losses
from foxhunt.task.bootstrap import day_blocks, interval

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ES_FUT_60d_5min.parquet"


def baselines(frame: pd.DataFrame) -> list[str]:
    """Every baseline with columns in the frame (`<name>:q<level>`), but the zero forecast."""
    names = dict.fromkeys(c.split(":")[0] for c in frame.columns if ":q" in c)
    return [name for name in names if name != "zero"]


def pinball(frame: pd.DataFrame, prefix: str, quantiles: list[float]) -> np.ndarray:
    """[rows, Q] pinball loss of each quantile of the forecaster whose columns start so."""
    realized = frame["realized_bp"].to_numpy()
    losses = [pinball_loss(frame[f"{prefix}q{q:g}"].to_numpy(), realized, q) for q in quantiles]
    return np.stack(losses, axis=-1)


def quantile_levels(frame: pd.DataFrame) -> list[float]:
    return sorted(float(c[1:]) for c in frame.columns if c.startswith("q") and ":" not in c)


def score(frame: pd.DataFrame, resamples: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per baseline and per measure (mean QL, then QL at each level): both losses, the mean
    difference TFT - baseline and its 95% day-block bootstrap interval."""
    quantiles = quantile_levels(frame)
    days = day_blocks(pd.DatetimeIndex(frame["origin"]))
    tft = pinball(frame, "", quantiles)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in baselines(frame):
        base = pinball(frame, f"{name}:", quantiles)
        ok = np.isfinite(base).all(axis=1)
        if not ok.any():  # a baseline that could not be fitted: nothing to compare
            continue
        measures = {"mean": slice(None), **{f"q{q:g}": [i] for i, q in enumerate(quantiles)}}
        out[name] = {}
        for measure, columns in measures.items():
            a, b = tft[ok][:, columns].mean(axis=1), base[ok][:, columns].mean(axis=1)
            low, high = interval(a - b, days[ok], resamples)
            out[name][measure] = {
                "tft": float(a.mean()),
                "baseline": float(b.mean()),
                "diff": float((a - b).mean()),
                "low": low,
                "high": high,
            }
    return out


def difference_rows(frame: pd.DataFrame, resamples: int) -> list[str]:
    """Markdown rows: forecaster | mean QL | DM p of the TFT against it | in the 90% MCS."""
    w = windows_of(frame)
    tests = differences(w, resamples)
    rows = []
    for name, pred in w.forecasts.items():
        loss = float(window_losses(pred, w.target, w.quantiles).mean())
        dm = tests["dm"].get(name)
        p_dm = "-" if dm is None else f"{dm['pvalue']:.3f}"
        p_mcs = tests["mcs"]["pvalues"].get(name)
        inside = "in" if name in tests["mcs"]["included"] else "out"
        mcs = "-" if p_mcs is None else f"{inside} ({p_mcs:.3f})"
        rows.append(f"{name} | {loss:.4f} | {p_dm} | {mcs}")
    return rows


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
    print(
        "seed | baseline | measure | TFT QL | baseline QL | TFT - baseline (bp) | 95% block-bootstrap"
    )
    print("--- | --- | --- | ---: | ---: | ---: | ---")
    for seed in args.seeds:
        run = args.runs / f"seed{seed}"
        train(run, args.data, seed, args.extra)
        frame = pd.read_parquet(run / "test_forecasts.parquet")
        for name, measures in score(frame, args.resamples).items():
            for measure, s in measures.items():
                verdict = "beats" if s["high"] < 0 else "loses" if s["low"] > 0 else "tie"
                print(
                    f"{seed} | {name} | {measure} | {s['tft']:.4f} | {s['baseline']:.4f} | "
                    f"{s['diff']:+.4f} | [{s['low']:+.4f}, {s['high']:+.4f}] ({verdict})"
                )
        print(f"\nseed {seed}: forecaster | mean QL | DM p (TFT vs it) | MCS 90% (p)")
        print("--- | ---: | ---: | ---")
        print("\n".join(difference_rows(frame, args.resamples)), end="\n\n")


if __name__ == "__main__":
    main()
