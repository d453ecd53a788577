"""The feature store against the in-memory path (issue 41): seeded 1-minute bars of several
instruments (data/instruments.py) at the tft-225 feature groups, prepared in a fresh process
each way: in memory, through a new store (it writes the entry), and through it again (it
reuses the entry). For each: wall seconds, peak RSS (VmHWM), the resident anonymous and
file-backed memory after it read `--batches` random training batches (the store's inputs are
file-backed pages of its memory map, which the kernel may drop), and the batches per second
of that gather (`WindowDataset.__getitems__`, the training loader's one call per batch).

    .venv/bin/python benchmarks/feature_store_reuse.py              # 10 instruments x 30 days
    .venv/bin/python benchmarks/feature_store_reuse.py --days 3     # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

SYMBOLS = ("6E", "CL", "ES", "GC", "NG", "NQ", "RTY", "YM", "ZB", "ZN")
BATCH = 32  # tft-225's batch


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith(f"{field}:"))
    return int(line.split()[1]) * 1024


def measure(bars: str, store: str | None, batches: int) -> dict[str, float]:
    """In this (fresh) process: prepare, then gather `batches` random training batches."""
    import numpy as np

    from foxhunt.cli.presets import TFT225_FEATURES
    from foxhunt.data import DataConfig, prepare_data

    start = time.perf_counter()
    config = DataConfig(
        path=Path(bars),
        lookback=128,
        horizon=16,
        feature_groups=TFT225_FEATURES,
        feature_store=store,
    )
    data = prepare_data(config)
    prepared = time.perf_counter() - start
    rng = np.random.default_rng(0)
    train = data.train
    start = time.perf_counter()
    for _ in range(batches):
        train.__getitems__(rng.integers(0, len(train), size=BATCH).tolist())
    gathered = time.perf_counter() - start
    return {
        "prepare_s": prepared,
        "batches_per_s": batches / gathered,
        "peak_bytes": _status("VmHWM"),
        "anon_bytes": _status("RssAnon"),
        "file_bytes": _status("RssFile"),
        "rows": data.summary.rows,
        "inputs": train.past_values.shape[1],
    }


def _child(bars: Path, store: Path | None, batches: int) -> dict[str, float]:
    args = [sys.executable, __file__, "--measure", str(bars), "--batches", str(batches)]
    if store is not None:
        args += ["--store", str(store)]
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _cpu() -> str:
    with open("/proc/cpuinfo") as f:
        name = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    return f"{name}, {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.store, args.batches)))
        return
    from foxhunt.data.instruments import generate_instruments

    print(f"feature store reuse, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {_cpu()}")
    with tempfile.TemporaryDirectory() as folder:
        bars = Path(folder) / "bars.parquet"
        frame = generate_instruments(days=args.days, seed=0, symbols=SYMBOLS, bar_minutes=1)
        frame.to_parquet(bars, index=False)
        del frame
        store = Path(folder) / "store"
        rows = {}
        for name, where in (
            ("in memory", None),
            ("store, writes", store),
            ("store, reuses", store),
        ):
            load = os.getloadavg()[0]
            rows[name] = {**_child(bars, where, args.batches), "load": load}
        size = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
    first = rows["in memory"]
    print(
        f"{first['rows']:,.0f} bars ({len(SYMBOLS)} instruments x {args.days} days), "
        f"{first['inputs']:.0f} inputs; store {size / 1e6:.0f} MB; {args.batches} random "
        f"batches of {BATCH} windows"
    )
    print(
        f"{'path':<16}{'prepare s':>10}{'peak GB':>9}{'anon GB':>9}{'file GB':>9}"
        f"{'batches/s':>11}{'load':>6}"
    )
    for name, m in rows.items():
        print(
            f"{name:<16}{m['prepare_s']:>10.1f}{m['peak_bytes'] / 1e9:>9.2f}"
            f"{m['anon_bytes'] / 1e9:>9.2f}{m['file_bytes'] / 1e9:>9.2f}"
            f"{m['batches_per_s']:>11.0f}{m['load']:>6.1f}"
        )


if __name__ == "__main__":
    main()
