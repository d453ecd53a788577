"""Two gloo ranks prepare one streamed feature store entry together (data/shared_store.py):
each computes only its own symbols, and the entry is the one-process entry byte for byte; a
rank that fails stops both, and nothing reads as complete."""

import json
from pathlib import Path

from ddp_harness import launch
from ddp_workers import store_worker

from foxhunt.data import DataConfig, prepare_data
from foxhunt.data.instruments import generate_instruments

GROUPS = ("returns:3/12", "realized:3/12", "trend:6/12", "cross:3", "instrument")  # streamed
SYMBOLS = ("CL", "ES", "ZN")


def config(bars: Path, store: Path) -> DataConfig:
    return DataConfig(
        path=bars, lookback=16, horizon=4, feature_groups=GROUPS, feature_store=str(store),
        calendar="none",
    )  # fmt: skip


def entries(store: Path) -> list[Path]:
    return sorted(p for p in store.iterdir() if not p.name.startswith("."))


def test_two_ranks_share_the_symbols_and_write_the_one_process_entry(tmp_path: Path) -> None:
    bars = tmp_path / "bars.parquet"
    generate_instruments(days=3, seed=3, symbols=SYMBOLS, bar_minutes=5).to_parquet(bars)
    failed, shared = tmp_path / "failed", tmp_path / "shared"
    outcome = launch(
        store_worker,
        tmp_path / "logs",
        configs=[config(bars, failed), config(bars, shared)],
        fail_rank=1,
        timeout_s=120,
    )
    assert outcome.exitcodes == [2, 2], outcome.report()  # the first config failed on both
    # rank 1 failed on its symbol: rank 0 says so, and left no entry nor staging folder
    assert "rank 1 failed preparing its symbols" in outcome.logs[0], outcome.report()
    assert entries(failed) == [] and not list(failed.glob(".staging-*"))

    serial = tmp_path / "serial"
    prepare_data(config(bars, serial))
    (one,), (two,) = entries(serial), entries(shared)
    assert one.name == two.name  # the same key
    assert not list(shared.glob(".staging-*"))
    files = sorted(f.name for f in one.iterdir())
    assert files == sorted(f.name for f in two.iterdir())  # no part file left in the entry
    for name in files:  # every array and JSON file byte for byte; the manifest's times differ
        if name != "manifest.json":
            assert (one / name).read_bytes() == (two / name).read_bytes(), name

    # each rank computed its own symbols only (rank r: r, r + 2, ...), each symbol once
    meta = json.loads((two / "manifest.json").read_text())["metadata"]
    assert meta["streamed"] is True
    ranges = meta["symbols"]
    first = [ranges[s][0] for s in sorted(ranges, key=lambda s: ranges[s][0])]
    for rank in (0, 1):
        lines = (tmp_path / "logs" / f"computed{rank}.txt").read_text().split("\n")
        done = [int(line.split()[1]) for line in lines if line.startswith("1 ")]
        assert done == first[rank::2], (rank, done)
    assert "rank 0 of 2 computed symbols 0, 2" in outcome.logs[0]
    assert "rank 1 of 2 computed symbols 1" in outcome.logs[1]


def test_a_rank_killed_while_computing_leaves_no_entry_and_a_rerun_writes_it(
    tmp_path: Path,
) -> None:
    bars = tmp_path / "bars.parquet"
    generate_instruments(days=2, seed=4, symbols=SYMBOLS[:2], bar_minutes=5).to_parquet(bars)
    store = tmp_path / "store"
    outcome = launch(store_worker, tmp_path / "logs", configs=[config(bars, store)], die_rank=1)
    assert outcome.exitcodes == [2, 9], outcome.report()
    assert "another rank failed" in outcome.logs[0], outcome.report()
    assert entries(store) == [] and not list(store.glob(".staging-*"))  # nothing reads as done
    prepare_data(config(bars, store))  # the rerun (here on one process) writes it
    assert len(entries(store)) == 1
