"""Does the TFT beat the volatility baselines? Walk-forward by default, per fold and pooled.

    .venv/bin/python benchmarks/forecast_quality.py --runs /tmp/fq                 # ES bars
    .venv/bin/python benchmarks/forecast_quality.py --runs /tmp/fq --folds 6 -- --preset tft-225
    .venv/bin/python benchmarks/forecast_quality.py --runs /tmp/fq --single-split --seeds 0 1 2

Walk-forward (the default): one `foxhunt backtest` per seed on the bars (`--folds 4 --scheme
expanding --embargo 1h --max-gap 10min`, defaults otherwise, flags after `--` passed on; a
folder of `--runs` that already holds `backtest.json` is read back, not run again), and from its
`backtest.json` a table per fold and one pooled over every fold's test windows: each
forecaster's mean quantile loss, its loss at the 0.1 and 0.9 levels, the coverage of the outer
interval, the TFT minus it with a 95% day-block bootstrap interval, the Diebold-Mariano p-value
of the TFT against it and whether it is in the 90% model confidence set (`foxhunt.task.
difference`, the tests `train`, `evaluate` and `backtest` report).

`--single-split`: one `foxhunt train` run per seed (its one test split), the same table from its
`test_forecasts.parquet`, and before it the TFT minus each baseline per measure (mean QL, then
each level's QL) with its day-block interval (windows of one day move together: their errors
are correlated through the day's volatility). A negative difference whose interval excludes 0
is a TFT that beats the baseline.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from foxhunt.backtest.scoring import TFT, forecaster_metrics, windows_of
from foxhunt.backtest.summary import differences
from foxhunt.task import pinball as pinball_loss
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


def fold_scores(block: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{forecaster: {"mean", "levels": {level: QL}, "coverage"}} of a fold of backtest.json (or
    of metrics from `forecaster_metrics`); a forecaster without forecasts is left out."""
    metrics = {TFT: block["metrics"], **block["baselines"]}
    return {
        name: {
            "mean": m["mean_quantile_loss"],
            "levels": m["quantile_loss"],
            "coverage": m["coverage"]["observed"],
        }
        for name, m in metrics.items()
        if "mean_quantile_loss" in m
    }


def pooled_scores(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The same from backtest.json's summary (every fold's test windows together)."""
    metrics = {TFT: summary, **summary["baselines"]}
    return {
        name: {
            "mean": m["mean_quantile_loss"]["mean"],
            "levels": m.get("quantile_loss") or {},  # absent in backtests before it was kept
            "coverage": m["coverage"]["mean"],
        }
        for name, m in metrics.items()
        if m["mean_quantile_loss"]["mean"] is not None
    }


def _num(value: float | None, fmt: str = ".4f") -> str:
    return "-" if value is None or not np.isfinite(value) else format(value, fmt)


def table(scores: dict[str, dict[str, Any]], tests: dict[str, Any]) -> list[str]:
    """Markdown rows (header first) of every forecaster; * marks the lowest mean QL."""
    best = min(scores, key=lambda n: scores[n]["mean"])
    rows = [
        "forecaster | mean QL | QL@0.1 | QL@0.9 | coverage | TFT - it [95% day-block] | "
        "DM p (TFT vs it) | MCS 90% (p)",
        "--- | ---: | ---: | ---: | ---: | ---: | ---: | ---",
    ]
    mcs = tests["mcs"]
    for name, s in scores.items():
        dm = tests["dm"].get(name)
        diff = "-"
        if dm is not None:
            low, high = dm.get("ci95") or (None, None)
            diff = f"{_num(dm['mean'], '+.4f')} [{_num(low, '+.4f')}, {_num(high, '+.4f')}]"
        p_mcs = mcs["pvalues"].get(name)
        inside = "in" if name in mcs["included"] else "out"
        rows.append(
            f"{name}{' *' if name == best else ''} | {_num(s['mean'])} | "
            f"{_num(s['levels'].get('0.1'))} | {_num(s['levels'].get('0.9'))} | "
            f"{_num(s['coverage'], '.3f')} | {diff} | "
            f"{'-' if dm is None else _num(dm['pvalue'], '.3f')} | "
            f"{'-' if p_mcs is None else f'{inside} ({p_mcs:.3f})'}"
        )
    return rows


WEIGHTS = {"trained": "trained", "initial": "initial (the gate kept the calibrated head)"}


def walk_forward_tables(result: dict[str, Any]) -> list[str]:
    """Lines: a table per fold of backtest.json, then the pooled one."""
    lines = []
    for k, block in enumerate(result["folds"]):
        test, windows = block["test"], block["windows"]
        lines += [
            f"fold {k}: test {test['start']} .. {test['end'] or 'end'}, windows train/validation/"
            f"test {windows['train']}/{windows['validation']}/{windows['test']}, "
            f"{block.get('seconds', float('nan')):.0f} s, "
            f"weights {WEIGHTS.get(block.get('weights'), 'not recorded')}",
            "",
            *table(fold_scores(block), block["differences"]),
            "",
        ]
    summary = result["summary"]
    lines += [f"pooled: {len(result['folds'])} folds, {summary['windows']} test windows", ""]
    lines += table(pooled_scores(summary), summary["differences"])
    return lines


def single_split_tables(frame: pd.DataFrame, resamples: int) -> list[str]:
    """Lines: the TFT minus each baseline per measure, then the table of every forecaster."""
    lines = [
        "baseline | measure | TFT QL | baseline QL | TFT - baseline (bp) | 95% block-bootstrap",
        "--- | --- | ---: | ---: | ---: | ---",
    ]
    for name, measures in score(frame, resamples).items():
        for measure, s in measures.items():
            verdict = "beats" if s["high"] < 0 else "loses" if s["low"] > 0 else "tie"
            lines.append(
                f"{name} | {measure} | {s['tft']:.4f} | {s['baseline']:.4f} | "
                f"{s['diff']:+.4f} | [{s['low']:+.4f}, {s['high']:+.4f}] ({verdict})"
            )
    return [*lines, "", *frame_table(frame, resamples)]


def frame_table(frame: pd.DataFrame, resamples: int) -> list[str]:
    """The table of every forecaster of a forecast frame (`test_forecasts.parquet`)."""
    w = windows_of(frame)
    metrics = {name: forecaster_metrics(w, name) for name in w.forecasts}
    scores = fold_scores({"metrics": metrics[TFT], "baselines": metrics})
    return table(scores, differences(w, resamples))


def forecasts(folder: Path, fold: int | None) -> pd.DataFrame:
    where = folder if fold is None else folder / "folds" / str(fold) / "run"
    return pd.read_parquet(where / "test_forecasts.parquet")


def versus(run: Path, others: dict[str, Path], fold: int | None) -> pd.DataFrame:
    """The test forecasts of `run` (fold `fold`; None: a single split) with each other run's
    TFT as a forecaster of that name, on the windows they all forecast: the same bars, folds,
    horizon and quantile levels, so the losses are paired."""
    frame = forecasts(run, fold)
    keys, own = ["symbol", "origin", "step"], [f"q{q:g}" for q in quantile_levels(frame)]
    for name, folder in others.items():
        other = forecasts(folder, fold)
        shape, theirs = (frame["step"].max(), own), (other["step"].max(), list(other.columns))
        if shape[0] != theirs[0] or not set(own) <= set(theirs[1]):
            raise SystemExit(
                f"--versus {name}={folder}: it forecasts {theirs[0]} steps at "
                f"{quantile_levels(other)}, this run {shape[0]} at {quantile_levels(frame)}: "
                "give it the same --horizon and --quantiles"
            )
        renamed = {c: f"{name}:{c}" for c in own} | {"realized_bp": "other_realized"}
        frame = frame.merge(other[[*keys, "realized_bp", *own]].rename(columns=renamed), on=keys)
        if not np.allclose(frame["realized_bp"], frame["other_realized"], atol=1e-3):
            raise SystemExit(f"--versus {name}={folder}: other targets: not the same bars")
        frame = frame.drop(columns="other_realized")
    return frame


def versus_tables(
    run: Path, others: dict[str, Path], result: dict[str, Any], resamples: int
) -> list[str]:
    """Lines: per fold and pooled, the table over the windows every run forecast."""
    lines: list[str] = []
    frames = []
    for k, block in enumerate(result["folds"]):
        for name, folder in others.items():
            theirs = json.loads((folder / "backtest.json").read_text())["folds"]
            if len(theirs) <= k or theirs[k]["test"] != block["test"]:
                raise SystemExit(f"--versus {name}={folder}: fold {k} tests other bars")
        frames.append(versus(run, others, k))
        windows = len(frames[-1]) // int(frames[-1]["step"].max())
        lines += [f"fold {k}, {windows} paired windows:", "", *frame_table(frames[-1], resamples)]
        lines.append("")
    pooled = pd.concat(frames, ignore_index=True)
    windows = len(pooled) // int(pooled["step"].max())
    return [*lines, f"pooled, {windows} paired windows:", "", *frame_table(pooled, resamples)]


def _run(cmd: list[str], out: Path) -> float:
    """Run a foxhunt command into `out`; its wall seconds."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "foxhunt", *cmd, "--output-dir", str(out)], check=True)
    return time.perf_counter() - started


def _named(text: str) -> tuple[str, Path]:
    name, sep, folder = text.partition("=")
    if not sep or not name or ":" in name or name == TFT:
        raise SystemExit(f"--versus {text!r}: give NAME=DIR (NAME without ':', not {TFT!r})")
    return name, Path(folder)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--runs", type=Path, required=True, help="one folder per seed: RUNS/seed<S>")
    p.add_argument("--folds", type=int, default=4, help="walk-forward folds (default 4)")
    p.add_argument("--single-split", action="store_true", help="one train/test split per seed")
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument(
        "--versus",
        nargs="+",
        default=[],
        metavar="NAME=DIR",
        help="other backtest (or, with --single-split, run) folders of the same seed, whose\n"
        "TFT joins the tables as NAME on the windows both forecast (same horizon, levels)",
    )
    p.add_argument("extra", nargs="*", help="flags for foxhunt backtest / train, after --")
    args = p.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"{args.data} not found: pass --data PATH (see ../shared/data/README.md)")
    if args.folds < 1:
        raise SystemExit(f"--folds {args.folds}: give at least 1")
    others = dict(_named(v) for v in args.versus)
    common = ["--parquet-file", str(args.data), "--max-gap", "10min"]
    for seed in args.seeds:
        run = args.runs / f"seed{seed}"
        flags = [*common, "--seed", str(seed), *args.extra]
        if args.single_split:
            if not (run / "test_forecasts.parquet").is_file():
                seconds = _run(["train", *flags, "--no-report"], run)
                print(f"seed {seed}: trained in {seconds:.0f} s")
            frame = pd.read_parquet(run / "test_forecasts.parquet")
            lines = single_split_tables(frame, args.resamples)
            if others:
                lines += ["", *frame_table(versus(run, others, None), args.resamples)]
            print(f"\nseed {seed}, single split ({run}):\n", *lines, sep="\n", end="\n\n")
            continue
        if not (run / "backtest.json").is_file():
            flags += ["--folds", str(args.folds), "--scheme", "expanding", "--embargo", "1h"]
            seconds = _run(["backtest", *flags, "--report", "false"], run)
            print(f"seed {seed}: backtest in {seconds:.0f} s")
        result = json.loads((run / "backtest.json").read_text())
        lines = walk_forward_tables(result)
        if others:
            paired = versus_tables(run, others, result, args.resamples)
            lines += ["", f"versus {', '.join(others)}:", "", *paired]
        print(f"\nseed {seed}, walk-forward ({run}):\n", *lines, sep="\n", end="\n\n")


if __name__ == "__main__":
    main()
