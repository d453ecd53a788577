"""Data preparation at scale: a year of 1-minute bars of 10 instruments (~3.4 M rows, seeded
synthetic, data/instruments.py) written as one Parquet file and as a folder of one file per
day, then prepared through `prepare_data`, the path `foxhunt train` takes up to the windows.

Each measurement runs in a fresh process, so its peak resident memory (VmHWM) is its own.
The rows: reading each source; preparing it with today's default inputs (targets < 30 s,
< 2 GB); preparing the one file with the tft-225 preset's feature groups (docs/data.md;
targets < 60 s, < 6 GB). Wall seconds depend on what else the machine runs, so the CPU
seconds and the load average (before and after) are printed beside them.

    .venv/bin/python benchmarks/data_prep.py            # 252 days x 10 instruments
    .venv/bin/python benchmarks/data_prep.py --quick    # 3 days: a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = "default"
LIBRARY = "tft-225"
#: (wall seconds, peak bytes) each prepare row is held to, for the full year
TARGETS = {DEFAULT: (30.0, 2e9), LIBRARY: (60.0, 6e9)}
SYMBOLS = ("6E", "CL", "ES", "GC", "NG", "NQ", "RTY", "YM", "ZB", "ZN")
QUICK_DAYS = 3


def _peak_bytes() -> int:
    """This process's peak RSS: VmHWM (ru_maxrss would carry the parent's peak over the fork
    and exec that started it)."""
    try:
        with open("/proc/self/status") as f:
            line = next(x for x in f if x.startswith("VmHWM:"))
        return int(line.split()[1]) * 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def measure(path: str, what: str) -> dict[str, float]:
    """In this (fresh) process: read `path` ("read"), or prepare it with today's inputs
    ("default") or tft-225's groups; seconds, CPU seconds, peak RSS and counts."""
    from foxhunt.data import DataConfig, prepare_data
    from foxhunt.data.sources import read_source

    before = _peak_bytes()  # the interpreter, numpy, pandas, torch
    start, cpu = time.perf_counter(), time.process_time()
    inputs = windows = 0
    if what == "read":
        frame = read_source(path)
        rows, symbols = len(frame), frame["symbol"].nunique()
    else:
        groups: tuple[str, ...] = ()
        if what == LIBRARY:
            from foxhunt.cli.presets import TFT225_FEATURES

            groups = TFT225_FEATURES
        config = DataConfig(path=Path(path), lookback=64, horizon=8, feature_groups=groups)
        data = prepare_data(config)
        rows, symbols = data.summary.rows, len(data.summary.symbols)
        windows = sum(data.summary.windows.values())
        inputs = data.train.past_values.shape[1]
    return {
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu,
        "peak_bytes": _peak_bytes(),
        "imports_bytes": before,
        "rows": rows,
        "symbols": symbols,
        "windows": windows,
        "inputs": inputs,
    }


def _child(path: Path, what: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(path), "--what", what],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_bars(folder: Path, days: int, seed: int) -> tuple[Path, Path, int]:
    from foxhunt.data.instruments import generate_instruments

    start = time.perf_counter()
    bars = generate_instruments(days=days, seed=seed, symbols=SYMBOLS, bar_minutes=1)
    single = folder / "bars.parquet"
    bars.to_parquet(single, index=False, row_group_size=256_000)
    daily = folder / "daily"
    daily.mkdir()
    day = bars["timestamp"].dt.date
    for when, part in bars.groupby(day, sort=True):
        part.to_parquet(daily / f"{when}.parquet", index=False)
    print(
        f"wrote {len(bars):,} rows ({len(SYMBOLS)} instruments x {days} days of 1-minute bars; "
        f"{len(list(daily.iterdir()))} daily files) in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return single, daily, len(bars)


def _load() -> str:
    """The 1-minute load average and the CPUs it is shared by."""
    try:
        return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    except OSError:
        return "load unknown"


def _verdict(what: str, m: dict[str, float], full_year: bool) -> str:
    if what == "read":
        return ""
    seconds, peak = TARGETS[what]
    if not full_year:
        return f"(targets < {seconds:.0f} s, < {peak / 1e9:.0f} GB: for the full year)"
    ok_t, ok_m = m["seconds"] < seconds, m["peak_bytes"] < peak
    return (
        f"{'ok' if ok_t else 'MISSED'} < {seconds:.0f} s, "
        f"{'ok' if ok_m else 'MISSED'} < {peak / 1e9:.0f} GB"
    )


HEADER = (
    f"{'source':<14}{'features':<10}{'bars':>11}{'instr.':>7}{'inputs':>7}{'windows':>11}"
    f"{'wall s':>8}{'CPU s':>8}{'peak GB':>9}{'imports':>9}  target (wall s, peak RSS)"
)


def _row(name: str, what: str, m: dict[str, float], full_year: bool) -> str:
    inputs = f"{m['inputs']:.0f}" if what != "read" else "-"
    windows = f"{m['windows']:,.0f}" if what != "read" else "-"
    return (
        f"{name:<14}{what:<10}{m['rows']:>11,.0f}{m['symbols']:>7.0f}{inputs:>7}{windows:>11}"
        f"{m['seconds']:>8.2f}{m['cpu_seconds']:>8.2f}{m['peak_bytes'] / 1e9:>9.2f}"
        f"{m['imports_bytes'] / 1e9:>9.2f}  {_verdict(what, m, full_year)}".rstrip()
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=252, help="sessions per instrument")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_DAYS} days: a smoke run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--what", default=DEFAULT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.what)))
        return 0
    days = QUICK_DAYS if args.quick else args.days
    with tempfile.TemporaryDirectory(prefix="foxhunt-bench-") as tmp:
        single, daily, _ = write_bars(Path(tmp), days, args.seed)
        print(f"before: {_load()}; GB = 1e9 bytes; peak: VmHWM of a fresh process", flush=True)
        print(HEADER, flush=True)
        sources = (("one file", single), ("daily folder", daily))
        runs = [(name, path, what) for name, path in sources for what in ("read", DEFAULT)]
        for name, path, what in [*runs, ("one file", single, LIBRARY)]:
            print(_row(name, what, _child(path, what), days >= 252), flush=True)
        print(f"after: {_load()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
