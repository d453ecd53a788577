"""How much memory the in-memory input matrix needs, known before it is allocated: a request
too large for this machine stops with exit 2 naming the sizes, never with an OOM kill."""

from __future__ import annotations

from pathlib import Path

import psutil

from foxhunt.data.features import FeatureSpec
from foxhunt.errors import DataError

#: bytes per bar beside the matrix while the features are computed (returns, times, codes,
#: the groups' temporaries, the windows' vectors), from docs/performance.md's tft-225 year:
#: 5.48 GB peak for 3.42 M bars x 229 float32 inputs = 3.13 GB of matrix, 0.31 GB imports
#: and the frame read (0.48 GB) already held when this is checked
LIBRARY_ROW_BYTES = 460
#: today's inputs alone are float64 columns stacked into a second float64 matrix
PLAIN_ROW_BYTES = 100
#: bytes per bar a preparation streamed a symbol at a time (data/streamed.py) holds for the
#: symbol it prepares, beside its matrix: its bars read and validated, times, codes, returns,
#: the windows' and the base volatility's vectors
STREAMED_ROW_BYTES = 300
#: bytes per bar the cross group holds over a whole symbol beside its blocks: the symbol's
#: bars (14 [n] vectors), then per window its own and the others' measures, their as-of
#: join and its columns (float64), and its float32 columns kept for the blocks
CROSS_ROW_BYTES = 112
CROSS_WINDOW_BYTES = 96
CGROUP = Path("/sys/fs/cgroup")


def matrix_bytes(rows: int, spec: FeatureSpec) -> int:
    """Bytes the preparation of `rows` bars at `spec` needs on top of the bars read."""
    inputs = len(spec.observed_names) + len(spec.known_names)
    if spec.groups:  # one float32 matrix, filled in place (features/matrix.py)
        return rows * (inputs * 4 + LIBRARY_ROW_BYTES)
    return rows * (inputs * 16 + PLAIN_ROW_BYTES)


def available_bytes() -> int:
    """Memory this process can still take: the OS's available memory, or less under a
    cgroup (v2) limit."""
    available = int(psutil.virtual_memory().available)
    try:
        limit = (CGROUP / "memory.max").read_text().strip()
        used = int((CGROUP / "memory.current").read_text())
    except (OSError, ValueError):
        return available
    return available if limit == "max" else min(available, max(int(limit) - used, 0))


def check_matrix_fits(
    rows: int, spec: FeatureSpec, *, source: str, store: str | None, reading: str | None = None
) -> None:
    """DataError (exit 2) before anything is allocated when `rows` bars at `spec` will not
    fit; `store` is the feature store being prepared, if any. `reading`: a command that
    encodes a saved run's bars in memory (evaluate, predict), whose only way out is fewer
    bars."""
    need, available = matrix_bytes(rows, spec), available_bytes()
    if need <= available:
        return
    inputs = len(spec.observed_names) + len(spec.known_names)
    size = (
        f"{source}: preparing {rows:,} bars x {inputs} inputs needs about {need / 1e9:.1f} GB "
        f"of memory and {available / 1e9:.1f} GB is available"
    )
    if reading is not None:
        raise DataError(
            f"{size}; {reading} encodes the file in memory: give it fewer bars (--start, "
            "--end, --symbols), or run it on a machine with that memory"
        )
    fewer = "or use fewer bars (--start, --end, --symbols) or inputs (--feature-groups)"
    if store is None:
        raise DataError(
            f"{size}; train from a feature store (--feature-store DIR: training then reads "
            f"windows from disk), prepared once on a machine with that memory, {fewer}"
        )
    raise DataError(
        f"{size}; preparing the feature store {store} still holds the matrix once: prepare "
        f"it on a machine with that memory (a run with the same bars reuses it), {fewer}"
    )


def check_symbol_fits(
    longest: int, spec: FeatureSpec, *, computed: int, source: str, workers: int = 1
) -> None:
    """DataError (exit 2) before the features are computed when a store prepared a symbol at
    a time will not fit: the largest block of rows computed at once (`computed`, in each of
    `workers` processes; features/blocks.py) beside the `longest` symbol's vectors (nothing of
    the other symbols is held)."""
    need = workers * symbol_bytes(longest, computed, spec) + longest * STREAMED_ROW_BYTES
    available = available_bytes()
    if need <= available:
        return
    inputs = len(spec.observed_names) + len(spec.known_names)
    raise DataError(
        f"{source}: preparing the feature store a symbol at a time needs about "
        f"{need / 1e9:.1f} GB of memory ({computed:,} bars x {inputs} inputs computed at "
        f"once, beside the longest symbol's {longest:,} bars) and {available / 1e9:.1f} GB is "
        "available; prepare it on a machine with that memory (a run with the same bars reuses "
        "it), or use fewer bars (--start, --end, --symbols) or inputs (--feature-groups)"
    )


def symbol_bytes(rows: int, computed: int, spec: FeatureSpec) -> int:
    """Bytes one symbol of `rows` bars needs while its features are computed, `computed` rows
    at a time (features/blocks.py): that block's matrix and, with the cross group, that
    group over all its rows."""
    windows = next((len(w) for g, w in spec.observed_groups if g.cross), None)
    cross = 0 if windows is None else rows * (CROSS_ROW_BYTES + CROSS_WINDOW_BYTES * windows)
    return matrix_bytes(computed, spec) + cross
