"""What a feature group is: its columns (name, window, warm-up) and how it computes them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from foxhunt.data.features.bars import Bars


@dataclass(frozen=True)
class Column:
    """One input: its name, its group, the window it uses (None: none) and its warm-up, the
    leading bars of each series (or "1 session") for which it is NaN."""

    name: str
    group: str
    window: int | None
    warmup: str


@dataclass(frozen=True)
class KnownRows:
    """What a known group may read of any rows, past or future: their local times and, with
    a contract column, each row's contract (a forecast bar's: its anchor's)."""

    local: pd.DatetimeIndex
    contracts: np.ndarray | None = None  # [N] contract names; None: no contract column


#: an observed group's compute: its inputs written into `out`
Fill = Callable[["Bars", tuple[int, ...], np.ndarray], None]
#: a known group's compute: [N, k] inputs of the rows
Clock = Callable[[KnownRows, tuple[int, ...]], np.ndarray]


@dataclass(frozen=True)
class Group:
    """A feature group. An observed group's `compute(bars, windows, out)` writes its inputs
    into `out`, the [N, len(columns(windows))] float32 view of the input matrix that they
    take (no [N, k] float64 copy of its own); a known group's `compute(local_times, windows)`
    returns them [N, k] (clock.py, expiry.py)."""

    name: str
    summary: str
    windows: tuple[int, ...]  # the default windows (bars); () = the group takes none
    columns: Callable[[tuple[int, ...]], list[Column]]
    compute: Fill | Clock
    min_window: int = 1
    known: bool = False  # known in advance (computed from the time alone)
    fitted: bool = False  # needs state fitted on the training rows
    cross: bool = False  # needs several symbols
    static: bool = False  # one value per symbol (a static input), fitted on the training rows
    contract: bool = False  # reads the contract column (a known group's KnownRows.contracts)


def windowed(
    group: str, stems: Sequence[str], warmup: Callable[[int], int] = lambda w: w
) -> Callable[[tuple[int, ...]], list[Column]]:
    """The columns `{stem}_{w}` of every window w, window by window."""

    def columns(windows: tuple[int, ...]) -> list[Column]:
        return [
            Column(f"{stem}_{w}", group, w, f"{warmup(w)} bars") for w in windows for stem in stems
        ]

    return columns
