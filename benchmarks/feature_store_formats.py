"""Which on-disk format holds a prepared input matrix (issue 41): numpy .npy read through a
memory map, Arrow IPC (Feather v2, memory-mapped) as one column per input or as one
fixed-size-list column, and Parquet (snappy, zstd), on the tft-225 inputs of seeded 1-minute
bars (data/instruments.py, scaled as training sees them).

For each: seconds to write the [N, P] float32 matrix (fsynced), its size, and the seconds to
gather a batch of random windows (64 windows of 128 rows, all P inputs, the training read)
from a freshly opened file (the page cache is warm: the write just went through it, as on a
second run). Then float16 storage: the relative error of every finite nonzero input stored
as float16 against its float32 value (max, median, and the share of values that leave
float16's normal range). zarr is not installed (not measured).

    .venv/bin/python benchmarks/feature_store_formats.py             # 4 instruments x 10 days
    .venv/bin/python benchmarks/feature_store_formats.py --days 3    # a smoke run
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

BATCH, LENGTH = 64, 128  # windows per gather, rows per window (tft-225's lookback)
GATHERS = 20  # batches timed per format (the median is reported)
SYMBOLS = ("CL", "ES", "NQ", "ZN")


def prepared_inputs(days: int) -> np.ndarray:
    """[N, P] float32: the tft-225 preset's scaled inputs of `days` of 1-minute bars."""
    from foxhunt.cli.presets import TFT225_FEATURES
    from foxhunt.data import DataConfig, prepare_data
    from foxhunt.data.instruments import generate_instruments

    bars = generate_instruments(days=days, seed=0, symbols=SYMBOLS, bar_minutes=1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bars.parquet"
        bars.to_parquet(path, index=False)
        config = DataConfig(path=path, lookback=LENGTH, horizon=16, feature_groups=TFT225_FEATURES)
        values = np.asarray(prepare_data(config).train.past_values)
    return np.ascontiguousarray(values)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _windows_rows(rows: int, rng: np.random.Generator) -> np.ndarray:
    starts = rng.integers(0, rows - LENGTH, size=BATCH)
    return (starts[:, None] + np.arange(LENGTH)).ravel()  # [B*L]


# --- writers: (path, matrix) -> None; readers: path -> (rows -> [B*L, P] float32) -------------
def write_npy(path: Path, matrix: np.ndarray) -> None:
    np.save(path, matrix)


def open_npy(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    mapped = np.load(path, mmap_mode="r")
    return lambda rows: np.take(mapped, rows, axis=0)


def _columns_table(matrix: np.ndarray):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.table({f"x{j}": matrix[:, j] for j in range(matrix.shape[1])})


def _list_table(matrix: np.ndarray):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    flat = pa.array(matrix.reshape(-1))
    return pa.table({"x": pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1])})


def write_ipc_columns(path: Path, matrix: np.ndarray) -> None:
    import pyarrow.feather as feather

    feather.write_feather(_columns_table(matrix), path, compression="uncompressed")


def write_ipc_list(path: Path, matrix: np.ndarray) -> None:
    import pyarrow.feather as feather

    feather.write_feather(_list_table(matrix), path, compression="uncompressed")


def open_ipc_columns(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    import pyarrow as pa

    table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()  # zero-copy over the map

    def gather(rows: np.ndarray) -> np.ndarray:
        taken = table.take(pa.array(rows))
        return np.stack([c.to_numpy() for c in taken.columns], axis=1)

    return gather


def open_ipc_list(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    import pyarrow as pa

    column = pa.ipc.open_file(pa.memory_map(str(path))).read_all().column(0)
    width = column.type.list_size

    def gather(rows: np.ndarray) -> np.ndarray:
        taken = column.take(pa.array(rows)).combine_chunks()
        return taken.flatten().to_numpy().reshape(-1, width)

    return gather


def parquet_writer(compression: str) -> Callable[[Path, np.ndarray], None]:
    def write(path: Path, matrix: np.ndarray) -> None:
        import pyarrow.parquet as pq

        pq.write_table(
            _columns_table(matrix), path, compression=compression, row_group_size=1 << 16
        )

    return write


def open_parquet(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    """Parquet has no row-level random access: the row groups holding the windows are read
    and decoded whole, then the rows taken."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    group_rows = file.metadata.row_group(0).num_rows

    def gather(rows: np.ndarray) -> np.ndarray:
        groups = np.unique(rows // group_rows)
        table = file.read_row_groups(groups.tolist())
        # positions of the rows inside the concatenated groups read
        local = np.searchsorted(groups, rows // group_rows) * group_rows + rows % group_rows
        taken = table.take(pa.array(local))
        return np.stack([c.to_numpy() for c in taken.columns], axis=1)

    return gather


FORMATS: dict[str, tuple[str, Callable[..., None], Callable[..., Callable[..., np.ndarray]]]] = {
    "npy memmap": ("npy", write_npy, open_npy),
    "arrow ipc, 1 col/input": ("arrow", write_ipc_columns, open_ipc_columns),
    "arrow ipc, list column": ("arrow", write_ipc_list, open_ipc_list),
    "parquet snappy": ("parquet", parquet_writer("snappy"), open_parquet),
    "parquet zstd": ("parquet", parquet_writer("zstd"), open_parquet),
}


def measure(matrix: np.ndarray, folder: Path) -> list[tuple[str, float, float, float]]:
    """(format, write s, MB, median gather ms) of each format; every gather is checked
    against the matrix itself, bit for bit."""
    out = []
    for name, (suffix, write, opener) in FORMATS.items():
        path = folder / f"{name.replace(' ', '_').replace(',', '').replace('/', '')}.{suffix}"
        start = time.perf_counter()
        write(path, matrix)
        _fsync(path)
        written = time.perf_counter() - start
        gather = opener(path)
        rng = np.random.default_rng(0)
        times = []
        for _ in range(GATHERS):
            rows = _windows_rows(len(matrix), rng)
            start = time.perf_counter()
            got = gather(rows)
            times.append(time.perf_counter() - start)
            if not np.array_equal(got, matrix[rows], equal_nan=True):
                raise AssertionError(f"{name}: the gathered windows differ from the matrix")
        out.append((name, written, path.stat().st_size / 1e6, 1e3 * float(np.median(times))))
        path.unlink()
    return out


def float16_error(matrix: np.ndarray) -> dict[str, float]:
    """Relative error of float16 storage over the finite nonzero inputs, and the share of
    them below float16's smallest normal (6.1e-5, precision lost) or above its max (inf)."""
    values = matrix[np.isfinite(matrix) & (matrix != 0)]
    half = values.astype(np.float16)
    error = np.abs(half.astype(np.float32) - values) / np.abs(values)
    tiny = np.finfo(np.float16).tiny
    return {
        "max": float(np.max(error)),
        "median": float(np.median(error)),
        "p99.9": float(np.quantile(error, 0.999)),
        "subnormal_share": float(np.mean(np.abs(values) < tiny)),
        "overflow_share": float(np.mean(~np.isfinite(half))),
    }


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            name = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        name = platform.processor() or "unknown CPU"
    return f"{name}, {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=10, help="days of 1-minute bars")
    args = parser.parse_args()
    matrix = prepared_inputs(args.days)
    print(
        f"feature store formats, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {_cpu()}, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"matrix: {matrix.shape[0]:,} rows x {matrix.shape[1]} inputs float32 "
        f"({matrix.nbytes / 1e6:.0f} MB; {len(SYMBOLS)} instruments x {args.days} days); "
        f"gather: {BATCH} windows x {LENGTH} rows, median of {GATHERS}"
    )
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as folder:
        rows = measure(matrix, Path(folder))
    print(f"{'format':<24}{'write s':>9}{'MB/s':>8}{'size MB':>9}{'x raw':>7}{'gather ms':>11}")
    raw = matrix.nbytes / 1e6
    for name, written, size, gather in rows:
        print(
            f"{name:<24}{written:>9.2f}{raw / written:>8.0f}{size:>9.1f}{size / raw:>7.2f}"
            f"{gather:>11.2f}"
        )
    err = float16_error(matrix)
    print(
        f"float16 storage (half the size): relative error max {err['max']:.3g}, median "
        f"{err['median']:.3g}, 99.9th percentile {err['p99.9']:.3g}; "
        f"{100 * err['subnormal_share']:.3f}% of values subnormal in float16, "
        f"{100 * err['overflow_share']:.3f}% overflow"
    )
    print("zarr: not installed here, not measured")


if __name__ == "__main__":
    main()
