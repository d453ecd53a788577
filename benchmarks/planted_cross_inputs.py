"""Which input carries the planted cross-instrument lead? (issue 39; no training, seconds)

The generator (data/planted/dynamics.py) raises the followers' volatility by `cross_lead` x c,
where c decays by `volume_decay` a bar and is driven by the leader's move in its own
observable volatility, min(|r| / (base sqrt(h)), 4) - 0.8: |z| times the leader's regime. The
oracle's observable path recomputes c from the bars. This prints, for candidate inputs made
of the leader's returns, their correlation with that pulse bar by bar, and the correlation of
each input decayed as c is (what a network with memory can form) with the first follower's c;
then the share of c's variance a linear fit on decayed inputs explains, raw and in logs:

    .venv/bin/python -m foxhunt planted /tmp/all.parquet --symbols ES,NQ --cross-lead 0.5
    .venv/bin/python benchmarks/planted_cross_inputs.py /tmp/all.parquet
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from foxhunt.data.planted.dynamics import Clock, base_scale
from foxhunt.data.planted.files import planted_config_of
from foxhunt.data.planted.oracle import read_bars


def decayed(x: np.ndarray, decay: float) -> np.ndarray:
    out, total = np.empty_like(x), 0.0
    for i, v in enumerate(np.nan_to_num(x - np.nanmean(x))):
        total = decay * total + v
        out[i] = total
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bars", help="a planted market of several symbols (foxhunt planted)")
    parser.add_argument("--warmup", type=int, default=300, help="leading bars left out")
    args = parser.parse_args()
    cfg = planted_config_of(args.bars)
    if cfg is None or len(cfg.symbols) < 2 or cfg.cross_lead <= 0:
        print(f"{args.bars}: not a planted market with a cross lead", file=sys.stderr)
        sys.exit(2)
    read = read_bars(pd.read_parquet(args.bars), cfg)
    law, clock, path, r = read.law, read.clock, read.path, read.seen.r[:, 0]
    c = np.array([state.c[1] for state in path[1:]])  # the first follower's, after each bar
    scale = np.array([
        base_scale(law, path[t], Clock(clock.season[t], clock.event[t], clock.opening[t]))[0]
        * np.sqrt(path[t].h[0]) for t in range(len(r))
    ])  # fmt: skip
    pulse = np.minimum(np.abs(r) / scale, 4.0) - 0.8
    moves = pd.Series(r)

    def rms(w: int) -> pd.Series:
        return np.sqrt((moves**2).rolling(w).mean())

    season = moves / np.asarray(clock.season).reshape(len(r), -1)[:, 0]
    candidates = {
        "abs(r) (the cross group's cross_vol_1)": moves.abs(),
        "rms over 3 bars (cross_vol_3)": rms(3),
        "abs(r) / rms over 4 bars": moves.abs() / rms(4),
        "abs(r) / rms over 48 bars": moves.abs() / rms(48),
        "abs(r) / rms over 276 bars": moves.abs() / rms(276),
        "abs(r / season) / its rms over 276 bars": season.abs()
        / np.sqrt((season**2).rolling(276).mean()),
    }
    kept = slice(args.warmup, None)
    print(f"# {args.bars}: {len(r)} bars of {', '.join(cfg.symbols)} (no timing: any CPU)")
    print("| input (of the leader) | corr with the pulse | decayed, corr with the follower's c |")
    print("| --- | ---: | ---: |")
    for name, values in candidates.items():
        x = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(x[kept])
        bar = np.corrcoef(x[kept][ok], pulse[kept][ok])[0, 1]
        memory = np.corrcoef(decayed(x, law.volume_decay)[kept], c[kept])[0, 1]
        print(f"| {name} | {bar:.3f} | {memory:.3f} |")
    logs = {  # the log makes the leader's scale (its season, its GARCH level) additive
        "abs(r)": moves.abs(),
        "log abs(r)": np.log(np.maximum(moves.abs(), 1e-6)),
        "abs(r / season)": season.abs(),
        "log abs(r / season)": np.log(np.maximum(season.abs(), 1e-6)),
    }
    print("\n| decayed input(s) of the leader | R2 of a least-squares fit of the follower's c |")
    print("| --- | ---: |")
    for names in (["abs(r)"], ["log abs(r)"], ["log abs(r / season)", "abs(r / season)"]):
        columns = [decayed(np.asarray(logs[n], np.float64), law.volume_decay) for n in names]
        print(f"| {' + '.join(names)} | {fitted_share(columns, c, kept):.3f} |")


def fitted_share(columns: list[np.ndarray], target: np.ndarray, kept: slice) -> float:
    """R2 of the least-squares fit of `target` on `columns` and a constant, over `kept`."""
    x = np.column_stack([*columns, np.ones(len(target))])[kept]
    y = target[kept]
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    return float(1.0 - (y - x @ beta).var() / y.var())


if __name__ == "__main__":
    main()
