"""Data preparation at scale: a year of 1-minute bars of 10 instruments (~3.5 M rows, seeded
synthetic, data/instruments.py) written as one Parquet file and as a folder of one file per
day, then prepared through `prepare_data`, the path `foxhunt train` takes up to the windows.

Each measurement runs in a fresh process, so its peak resident memory (VmHWM) is its own; the time and peak are printed against the targets (< 30 s, < 2 GB). The last row prepares the
one file with the tft-225 preset's feature groups (docs/data.md; targets < 60 s, < 6 GB).

    .venv/bin/python benchmarks/data_prep.py              # 252 days x 10 instruments
    .venv/bin/python benchmarks/data_prep.py --days 20    # a quick look
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 30.0
TARGET_BYTES = 2 << 30
#: the feature library at the tft-225 preset's groups: (seconds, bytes)
LIBRARY_TARGETS = (60.0, 6 << 30)
LIBRARY = "tft-225"
TARGETS = (TARGET_SECONDS, TARGET_BYTES)
STEPS = ("read", "prepare")
SYMBOLS = ("6E", "CL", "ES", "GC", "NG", "NQ", "RTY", "YM", "ZB", "ZN")


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
    """In this (fresh) process: read, or read and prepare, `path`; seconds and peak RSS."""
    from foxhunt.data import DataConfig, prepare_data
    from foxhunt.data.sources import read_source

    before = _peak_bytes()  # the interpreter, numpy, pandas, torch
    start, cpu = time.perf_counter(), time.process_time()
    if what == "read":
        rows = len(read_source(path))
        windows = 0
    else:
        groups: tuple[str, ...] = ()
        if what == LIBRARY:
            from foxhunt.cli.presets import TFT225_FEATURES

            groups = TFT225_FEATURES
        config = DataConfig(path=Path(path), lookback=64, horizon=8, feature_groups=groups)
        data = prepare_data(config)
        rows = data.summary.rows
        windows = sum(data.summary.windows.values())
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu,
        "peak_bytes": _peak_bytes(),
        "imports_bytes": before,
        "rows": rows,
        "windows": windows,
        "inputs": 0 if what == "read" else data.train.past_values.shape[1],
    }


def _child(path: Path, what: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", str(path), "--what", what],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=252, help="sessions per instrument")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--measure", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--what", default="prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure, args.what)))
        return 0
    with tempfile.TemporaryDirectory(prefix="foxhunt-bench-") as tmp:
        single, daily, _ = write_bars(Path(tmp), args.days, args.seed)
        print(
            f"{'source':<14}{'step':<9}{'seconds':>9}{'CPU s':>8}{'peak RSS':>11}{'imports':>9}"
            "  targets (seconds: wall clock)"
        )
        runs = [
            (n, p, w) for n, p in (("one file", single), ("daily folder", daily)) for w in STEPS
        ]
        for name, path, what in [*runs, ("features", single, LIBRARY)]:
            m = _child(path, what)
            gib, base = m["peak_bytes"] / 2**30, m["imports_bytes"] / 2**30
            verdict = ""
            if what != "read":
                seconds, peak = LIBRARY_TARGETS if what == LIBRARY else TARGETS
                ok_t, ok_m = m["seconds"] < seconds, m["peak_bytes"] < peak
                verdict = (
                    f"{'ok' if ok_t else 'MISSED'} < {seconds:.0f} s, "
                    f"{'ok' if ok_m else 'MISSED'} < {peak / 2**30:.0f} GiB; "
                    f"{m['rows']:,} rows, {m['windows']:,} windows, {m['inputs']} inputs"
                )
            print(
                f"{name:<14}{what:<9}{m['seconds']:>9.2f}{m['cpu_seconds']:>8.2f}"
                f"{gib:>9.2f} G{base:>7.2f} G  "
                f"{verdict}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
