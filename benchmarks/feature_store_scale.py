"""The feature store at scale (issue 41): seeded 1-minute bars of several instruments
(data/instruments.py, one Parquet file per symbol in a folder) at the tft-225 feature groups,
prepared into a store a symbol at a time (data/streamed.py), reused, and trained from, each
step in a fresh process that reports its own wall and CPU seconds and peak RSS
(`resource.getrusage`, VmHWM):

- prepare: bars per wall second and per CPU second (one core's share), peak RSS, store size;
- reuse: a second run on the same bars (the bars' hash and the store's checksums);
- train: `--steps` optimizer steps of the tft-225 model (cli/presets.py, batch 32, AdamW)
  on random training windows gathered from the store's memory map, then with `--in-memory`
  the same from the in-memory matrix: steps per second, peak RSS, the resident anonymous
  and file-backed memory at the end (the map's pages are file-backed: the kernel drops them
  under pressure).

    .venv/bin/python benchmarks/feature_store_scale.py --bars 2000000 --in-memory
    .venv/bin/python benchmarks/feature_store_scale.py --bars 20000000 --folder /tmp/big
    .venv/bin/python benchmarks/feature_store_scale.py --bars 200000 --steps 3   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SYMBOLS = ("6E", "CL", "ES", "GC", "NG", "NQ", "RTY", "YM", "ZB", "ZN")


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith(f"{field}:"))
    return int(line.split()[1]) * 1024


def _usage() -> dict[str, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu_s": own.ru_utime + own.ru_stime,
        "peak_bytes": _status("VmHWM"),
        "anon_bytes": _status("RssAnon"),
        "file_bytes": _status("RssFile"),
    }


def _config(bars: str, store: str | None) -> Any:
    from foxhunt.cli.presets import TFT225_FEATURES
    from foxhunt.data import DataConfig

    return DataConfig(
        path=Path(bars),
        lookback=128,
        horizon=16,
        feature_groups=TFT225_FEATURES,
        feature_store=store,
    )


def prepare(bars: str, store: str | None) -> dict[str, float]:
    """In this (fresh) process: prepare (or reuse) the store."""
    from foxhunt.data import prepare_data

    start = time.perf_counter()
    data = prepare_data(_config(bars, store))
    wall = time.perf_counter() - start
    return {"wall_s": wall, "rows": data.summary.rows, **_usage()}


def train(bars: str, store: str | None, steps: int) -> dict[str, float]:
    """In this (fresh) process: prepare, build tft-225 and time `steps` training steps."""
    from dataclasses import replace

    import torch

    from foxhunt.bench.presets import PRESETS
    from foxhunt.data import prepare_data
    from foxhunt.data.dataset import make_loader
    from foxhunt.jobs.prepare import fit_model_config
    from foxhunt.model.config import DATA_FIELDS
    from foxhunt.model.factory import build_model
    from foxhunt.task.loss import batch_loss
    from foxhunt.training.sampler import EpochBatchSampler

    torch.manual_seed(0)
    data = prepare_data(_config(bars, store))
    preset = PRESETS["tft-225"]
    config = fit_model_config(replace(preset.config, **dict.fromkeys(DATA_FIELDS)), data)
    model = build_model("tft", config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    # the trainer's sampler: a permutation tensor (8 bytes a window), not RandomSampler's
    # list of ints (36), which measured a training peak the trainer does not have
    order = EpochBatchSampler(len(data.train), batch_size=preset.batch_size, seed=0)
    loader = iter(make_loader(data.train, batch_sampler=order))

    def step() -> None:
        loss = batch_loss(model, next(loader), config.quantiles)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    step()  # the first step's allocations, not timed
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    # CPU seconds a step as well: on a shared machine the wall clock measures the neighbours
    per_step = {"steps_per_s": steps / wall, "cpu_s_per_step": cpu / steps}
    return {**per_step, "windows": len(data.train), **_usage()}


def _child(*args: str) -> dict[str, float]:
    command = [sys.executable, __file__, *args]
    out = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def generate(folder: Path, bars: int, symbols: int) -> int:
    """About `bars` 1-minute bars, `symbols` Parquet files in `folder`; the rows written."""
    from foxhunt.data.instruments import generate_instruments

    folder.mkdir(parents=True, exist_ok=True)
    per_day = len(generate_instruments(days=1, seed=0, symbols=SYMBOLS[:symbols], bar_minutes=1))
    days = max(1, round(bars / per_day))
    rows = 0
    for i, symbol in enumerate(SYMBOLS[:symbols]):
        frame = generate_instruments(days=days, seed=i, symbols=(symbol,), bar_minutes=1)
        frame.to_parquet(folder / f"{symbol}.parquet", index=False)
        rows += len(frame)
    return rows


def _cpu() -> str:
    with open("/proc/cpuinfo") as f:
        name = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    return f"{name}, {os.cpu_count()} CPUs"


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    bars, store = folder / "bars", folder / "store"
    start = time.perf_counter()
    rows = generate(bars, args.bars, args.symbols)
    out: dict[str, Any] = {"bars": rows, "generate_s": time.perf_counter() - start}
    out["load_before"] = os.getloadavg()[0]
    out["prepare"] = _child("--prepare", str(bars), "--store", str(store))
    out["store_bytes"] = _size(store)
    out["reuse"] = _child("--prepare", str(bars), "--store", str(store))
    steps = str(args.steps)
    out["train_store"] = _child("--train", str(bars), "--store", str(store), "--steps", steps)
    if args.in_memory:
        out["train_memory"] = _child("--train", str(bars), "--steps", steps)
    out["load_after"] = os.getloadavg()[0]
    return out


def report(out: dict[str, Any], args: argparse.Namespace) -> None:
    gb = 1e9
    prep = out["prepare"]
    print(
        f"{out['bars']:,} bars ({args.symbols} instruments, 1-minute), tft-225 groups; "
        f"store {out['store_bytes'] / gb:.2f} GB; load {out['load_before']:.1f} -> "
        f"{out['load_after']:.1f}"
    )
    print(
        f"prepare: {prep['wall_s']:.0f} s wall, {prep['cpu_s']:.0f} CPU s, "
        f"{out['bars'] / prep['wall_s']:,.0f} bars/s, {out['bars'] / prep['cpu_s']:,.0f} bars "
        f"per CPU second, peak RSS {prep['peak_bytes'] / gb:.2f} GB"
    )
    reuse = out["reuse"]
    print(f"reuse: {reuse['wall_s']:.1f} s wall, peak RSS {reuse['peak_bytes'] / gb:.2f} GB")
    for name in ("train_store", "train_memory"):
        if name in out:
            m = out[name]
            print(
                f"{name}: {m['steps_per_s']:.2f} steps/s ({m['cpu_s_per_step']:.1f} CPU s a "
                f"step) over {args.steps} steps, peak RSS "
                f"{m['peak_bytes'] / gb:.2f} GB (anon {m['anon_bytes'] / gb:.2f}, file "
                f"{m['file_bytes'] / gb:.2f} at the end)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bars", type=int, default=2_000_000)
    parser.add_argument("--symbols", type=int, default=10)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--in-memory", action="store_true", help="also train from memory")
    parser.add_argument("--folder", help="work here (kept) instead of a temporary folder")
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    parser.add_argument("--train", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare or args.train:
        result = (
            prepare(args.prepare, args.store)
            if args.prepare
            else train(args.train, args.store, args.steps)
        )
        print(json.dumps(result))
        return
    print(f"feature store at scale, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {_cpu()}")
    if args.folder:
        folder = Path(args.folder)
        shutil.rmtree(folder / "store", ignore_errors=True)
        out = run(folder, args)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = run(Path(tmp), args)
    report(out, args)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
