"""Suspect jumps: a continuous futures series without a contract column still rolls, and
the roll shows as one outsized return where the session reopens.

A bar's log return is suspect when it follows a gap (more than `GAP_FACTOR` times the
symbol's median bar spacing since the previous bar: a daily break, a weekend, a holiday) and
its size exceeds `k` robust standard deviations, sigma = 1.4826 x the median absolute
deviation (MAD) from the median, of the symbol's returns: the larger of the sigma of returns
inside sessions and the sigma of returns across gaps (so a market whose every reopening
moves a lot is measured against its reopenings). The MAD, unlike the standard deviation, is
not inflated by the few jumps it looks for. With the default k = 6, a 20-point roll gap on
ES near 5000 (40 bp) stands out against 5-minute bars (sigma ~ 4 bp inside sessions, ~ 6 bp
across the daily break on the real ES bars). A real news gap over a weekend is flagged too:
it is a warning to look, not a correction.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

log = logging.getLogger("foxhunt.data")

#: Robust standard deviations beyond which a return at a session boundary is suspect.
DEFAULT_K = 6.0
#: A time step longer than this many median bar spacings is a session boundary.
GAP_FACTOR = 1.5
#: MAD -> standard deviation of a normal distribution.
MAD_TO_SIGMA = 1.4826
#: Warnings list at most this many timestamps per symbol.
SHOWN = 5


@dataclass(frozen=True)
class SuspectJump:
    """One return at a session boundary beyond the threshold."""

    symbol: str
    timestamp: pd.Timestamp  # the bar after the gap
    previous: pd.Timestamp  # the bar before it
    log_return: float
    threshold: float  # |log return| above which a boundary return is suspect
    sigmas: float  # |log return| in robust standard deviations


def _robust_sigma(values: np.ndarray) -> float:
    return MAD_TO_SIGMA * float(np.median(np.abs(values - np.median(values))))


def suspect_jumps(frame: pd.DataFrame, *, k: float = DEFAULT_K) -> list[SuspectJump]:
    """The suspect jumps of a validated bars frame (sorted by symbol then time)."""
    if len(frame) < 3:
        return []
    times = pd.DatetimeIndex(frame["timestamp"])
    ns = times.as_unit("ns").asi8
    close = np.log(frame["close"].to_numpy(dtype=np.float64))
    symbols = frame["symbol"].to_numpy()
    same = symbols[1:] == symbols[:-1]  # [N-1]: bar i+1 follows bar i of its symbol
    returns, steps = np.diff(close), np.diff(ns)
    found: list[SuspectJump] = []
    bounds = np.flatnonzero(np.append(np.insert(~same, 0, True), True))
    for lo, hi in itertools.pairwise(bounds):  # one symbol: rows lo .. hi-1
        r, dt = returns[lo : hi - 1], steps[lo : hi - 1]  # steps into rows lo+1 .. hi-1
        if len(r) < 2:
            continue
        boundary = dt > GAP_FACTOR * np.median(dt)
        if boundary.all() or not boundary.any():
            continue
        sigma = max(_robust_sigma(r[~boundary]), _robust_sigma(r[boundary]))
        if sigma <= 0.0:  # flat prices: nothing to measure against
            continue
        threshold = k * sigma
        for i in np.flatnonzero(boundary & (np.abs(r) > threshold)):
            row = int(lo + i + 1)
            found.append(
                SuspectJump(
                    symbol=str(symbols[row]),
                    timestamp=times[row],
                    previous=times[row - 1],
                    log_return=float(r[i]),
                    threshold=threshold,
                    sigmas=float(abs(r[i]) / sigma),
                )
            )
    return found


def warn_suspect_jumps(frame: pd.DataFrame, source: str, *, k: float = DEFAULT_K) -> None:
    """One warning per symbol naming its suspect jumps (a roll without a contract column)."""
    jumps = suspect_jumps(frame, k=k)
    for symbol in dict.fromkeys(j.symbol for j in jumps):
        mine = [j for j in jumps if j.symbol == symbol]
        shown = ", ".join(
            f"{j.timestamp} ({j.log_return * 1e4:+.0f} bp, {j.sigmas:.0f} sigma)"
            for j in mine[:SHOWN]
        )
        more = f" and {len(mine) - SHOWN} more" if len(mine) > SHOWN else ""
        log.warning(
            "%s: symbol %r jumps by more than %.0f robust sigma where a session reopens at "
            "%s%s: contract rolls? Name each bar's contract in a 'contract' column (with "
            "--roll-adjust for one continuous series), or check those bars",
            source,
            symbol,
            k,
            shown,
            more,
        )
