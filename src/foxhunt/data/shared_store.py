"""A streamed feature store entry prepared by the ranks of a DDP job together (issue 41):
rank r computes symbols r, r + N, ... (the unit `--prepare-workers` splits too) into the one
staging folder; rank 0 alone reads and splits the bars, joins the parts, finishes and renames
the entry; every rank then reads the finished entry.

The exchange is two collectives, whatever happens, so no rank waits on one the others skip:
1. rank 0 broadcasts the symbols' jobs (`symbol_inputs.SymbolJob`, paths in its staging
   folder), or None when there is nothing to share (the entry is complete, or is prepared
   in memory), or the error that stopped it;
2. with jobs, every rank computes its share (its rows of the scratch matrix, and a part file
   of each symbol: returns and training ranges), then all gather each rank's outcome, so a
   rank's failure stops every rank with one line.
Then the other ranks wait for the entry as a second run does (`writer_lock`, no timeout: the
finishing on rank 0 may be long) and trust it only complete and checked (`open_complete`). A
rank killed while computing leaves the others at the gather until `--dist-timeout`; rank 0,
failing there, never finalizes, so nothing reads as complete. The ranks need one folder they
all see (a shared file system across machines).

The data layer runs no collective of its own: the job passes the process group's
(`training/distributed.py`) as `Ranks`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from foxhunt.data.symbol_inputs import SymbolInputs, SymbolJob, symbol_inputs
from foxhunt.errors import FoxhuntError
from foxhunt.storage.staged import store_error

log = logging.getLogger("foxhunt.data")


class ShareError(FoxhuntError):
    """Another rank failed preparing its share of the feature store."""

    exit_code = 1


@dataclass(frozen=True)
class Ranks:
    """The ranks of a job and its process group's collectives."""

    rank: int
    world_size: int
    broadcast: Callable[[Any], Any]  # rank 0's value, on every rank
    gather: Callable[[Any], list[Any]]  # every rank's value, in rank order, on every rank

    @property
    def enabled(self) -> bool:
        return self.world_size > 1


def _part(job: SymbolJob) -> Path:
    return job.scratch.parent / f"part-{job.first}.npz"


def _share(jobs: list[SymbolJob], workers: int, ranks: Ranks, hint: str) -> dict[int, SymbolInputs]:
    """This rank's symbols (r, r + N, ...) computed, each written to a part file on a rank
    other than 0 (rank 0 keeps its own, a few [n] vectors each); every rank's outcome
    gathered, a failure raised on every rank. This rank's results by symbol code."""
    mine = list(range(ranks.rank, len(jobs), ranks.world_size))
    done: dict[int, SymbolInputs] = {}
    try:
        for code, result in zip(mine, symbol_inputs([jobs[c] for c in mine], workers), strict=True):
            if ranks.rank == 0:
                done[code] = result
                continue
            try:
                np.savez(
                    _part(jobs[code]), returns=result.returns, low=result.low, high=result.high
                )
            except OSError as exc:
                raise store_error(jobs[code].scratch.parent, exc, hint) from None
    except Exception as exc:  # the others hear of it at the gather, then it is raised here
        ranks.gather((str(exc).splitlines()[0] if str(exc) else type(exc).__name__, mine))
        raise
    outcomes = ranks.gather((None, mine))
    for rank, (error, _) in enumerate(outcomes):
        if error is not None:
            raise ShareError(f"rank {rank} failed preparing its symbols of the store: {error}")
    log.info(
        "feature store: rank %d of %d computed symbols %s",
        ranks.rank,
        ranks.world_size,
        ", ".join(map(str, mine)) or "none",
    )
    return done


class MainShare:
    """Rank 0's side: `compute` replaces `symbol_inputs` in `streamed.write_streamed`;
    `finish` or `fail` ends the exchange when no jobs were sent."""

    def __init__(self, ranks: Ranks, hint: str) -> None:
        self.ranks, self.hint, self.sent = ranks, hint, False

    def compute(self, jobs: list[SymbolJob], workers: int) -> Iterator[SymbolInputs]:
        """Every symbol's `SymbolInputs`, in order: rank 0's own, the others' read back
        from their part files (then removed: the manifest never names them)."""
        self.sent = True  # set first: a failed broadcast is not sent again
        self.ranks.broadcast((jobs, None))
        own = _share(jobs, workers, self.ranks, self.hint)
        for code, job in enumerate(jobs):
            if code in own:
                yield own[code]
                continue
            with np.load(_part(job)) as part:
                result = SymbolInputs(job.first, part["returns"], part["low"], part["high"], 0)
            _part(job).unlink()
            yield result

    def finish(self) -> None:
        if not self.sent:
            self.sent = True
            self.ranks.broadcast((None, None))

    def fail(self, error: FoxhuntError) -> None:
        if not self.sent:
            self.sent = True
            self.ranks.broadcast((None, error))


def follow(ranks: Ranks, workers: int, hint: str) -> None:
    """Another rank's side, until the entry is rank 0's to finish: its share computed when
    rank 0 sends jobs; rank 0's error raised here too."""
    jobs, error = ranks.broadcast(None)
    if error is not None:
        raise error
    if jobs is not None:
        _share(jobs, workers, ranks, hint)
