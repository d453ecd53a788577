"""Row blocks of a long symbol's features (issue 41): a preparation's memory bounded by a
block, not by the longest symbol.

A symbol longer than `BLOCK_ROWS` rows is computed a block of rows at a time. Each block is
computed from a prefix of earlier rows that it then drops: at least `WARMUPS` times the
longest warm-up of the inputs, widened back to the first row of the session before the one
that reaches. So every rolling window and every session statistic (since the session's
open, the previous session's close) of a kept row sees the rows it reads, and an EWM has
forgotten all but e^-WARMUPS of what precedes the prefix. A block whose prefix reaches back
past the previous block's first row is merged into it: bars without session breaks (a
24-hour market) are then one computation, the whole symbol as before, never a quadratic
sum of ever longer prefixes. The groups' rolling sums are differences of cumulative sums
taken from the prefix, and pandas' rolling std and EWMs start there, so a blocked symbol's
inputs round differently from one unblocked computation of it (tests/data/
test_feature_blocks.py: at most 1e-5 relative).

The in-memory and the streamed preparations block alike (a symbol's blocks are set by its
own rows), so the two stay equal bit for bit, and a symbol no longer than a block (about
nine months of 23-hour days of 1-minute bars; every test and the README's bars) is
computed whole, exactly as before. The cross group reads the other symbols at each row and
is computed over the whole symbol, beside the blocks (about 500 bytes a bar at 4 windows:
`footprint.CROSS_ROW_BYTES`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from foxhunt.data.features.bars import session_first_row, session_gap, session_numbers

#: a symbol longer than this many rows is computed a block at a time (about 370 MB of the
#: tft-225 groups' matrix and temporaries, 1.4 KB a bar, against 2.8 GB for 2 M bars)
BLOCK_ROWS = 1 << 18
#: a block's prefix holds this many of the longest warm-up: an EWM of span s then weighs
#: what precedes the prefix by about e^-WARMUPS
WARMUPS = 20


@dataclass(frozen=True)
class Block:
    """Rows [start, stop) kept, computed from rows [prefix, stop)."""

    prefix: int
    start: int
    stop: int


def symbol_runs(symbols: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) of each symbol's rows (a frame sorted by symbol keeps them together)."""
    if len(symbols) == 0:
        return []
    changes = np.flatnonzero(symbols[1:] != symbols[:-1]) + 1
    edges = [0, *changes.tolist(), len(symbols)]
    return list(itertools.pairwise(edges))


def computed_rows(series: np.ndarray, times_ns: np.ndarray, gap_ns: int | None, warmup: int) -> int:
    """The most rows computed at once for one symbol's rows (their series codes and times;
    `gap_ns`: the fitted session gap): a block and its prefix, or all of them."""
    gap = session_gap(series, times_ns, gap_ns)
    symbol = np.zeros(len(series), np.int8)
    blocks = plan_blocks(symbol, session_numbers(series, times_ns, gap), warmup)
    return max((b.stop - b.prefix for b in blocks), default=0)


def plan_blocks(
    symbols: np.ndarray, session: np.ndarray, warmup: int, rows: int | None = None
) -> list[Block]:
    """The blocks of a frame's rows: one, the whole frame, when no symbol is longer than
    `rows`; else each symbol's rows cut every `rows` rows from its first, each block's prefix
    `WARMUPS * warmup` rows back then back to the first row of the session before
    (`session` [N]: session numbers, new at each series start); a block whose prefix reaches
    past the previous block's first row merged into it."""
    rows = BLOCK_ROWS if rows is None else rows  # read at each call: tests set it
    runs = symbol_runs(symbols)
    if all(stop - start <= rows for start, stop in runs):
        return [Block(0, 0, len(symbols))]
    firsts = session_first_row(session)
    reach = max(1, WARMUPS * warmup)
    blocks: list[Block] = []
    for first, last in runs:
        for start in range(first, last, rows):
            stop = min(start + rows, last)
            back = start - reach
            if back <= first:
                prefix = first
            else:  # the session before `back`'s (its first row, or the symbol's first row)
                previous = max(firsts[back] - 1, first)
                prefix = max(firsts[previous], first)
            if blocks and start > first and prefix <= blocks[-1].start:  # merged: no gain
                blocks[-1] = Block(blocks[-1].prefix, blocks[-1].start, stop)
            else:
                blocks.append(Block(int(prefix), start, stop))
    return blocks
