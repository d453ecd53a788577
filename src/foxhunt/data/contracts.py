"""Futures contracts in one file: per-contract segments, or one back-adjusted series.

A file may carry a `contract` (or `expiry`) column: ESH6 bars, then ESM6 bars, possibly both
trading on the same bars for days around the roll. Two treatments, both keeping the roll's
price difference out of every return the model sees or is scored on:

- segments (default): rows are sorted by symbol, contract (in order of each contract's first
  bar) and time; each contract is its own series for returns, rolling features, volatility
  and windows, so no window and no target spans two contracts. Overlapping contracts give
  two segments over the same times.
- back-adjusted (`roll_adjust` "ratio" or "difference"): one series per symbol that holds the
  active contract and switches to the next at the start of the first session in which the
  next contract's volume exceeds the active one's (a volume crossover; a session is a run of
  bars between steps longer than 1.5x the median bar spacing, so the switch falls on a
  reopening, where vendors' continuous series roll too). The roll's price gap is measured at the last bar before the switch that both
  contracts traded (without one: the old contract's last close against the new one's first
  open) and taken out of every earlier price: added (difference) or multiplied (ratio), so
  the latest prices are the real ones and the return at the switch is the new contract's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from foxhunt.errors import DataError

#: Column names (case-insensitive) taken as the contract column when it is "auto".
CONTRACT_CANDIDATES = ("contract", "expiry")
PRICES = ("open", "high", "low", "close")


@dataclass(frozen=True)
class Roll:
    """One switch of a back-adjusted series to the next contract."""

    symbol: str
    timestamp: pd.Timestamp  # first bar of `new` in the series
    old: str
    new: str
    reference: pd.Timestamp  # bar at which the price gap was measured
    gap: float  # new - old close at `reference` (points)
    ratio: float  # new / old close at `reference`


def find_contract_column(frame: pd.DataFrame, wanted: str | None, source: str) -> str | None:
    """The contract column of `frame`: `wanted` (which must exist), or with "auto" a column
    called contract or expiry, or None."""
    if wanted is None:
        return None
    if wanted != "auto":
        if wanted not in frame.columns:
            raise DataError(
                f"{source}: contract column {wanted!r} not found; columns found: "
                f"{list(frame.columns)}; fix --contract-column (or 'none')"
            )
        return wanted
    lower = {str(c).lower().strip(): str(c) for c in frame.columns}
    return next((lower[c] for c in CONTRACT_CANDIDATES if c in lower), None)


#: a symbol whose bars change contract back and forth more often than this share of its bars
#: held by one contract alone (and over INTERLEAVED_MIN times) is refused: a roll changes
#: contract a few times a year, and overlapping contracts share bar times
INTERLEAVED_SHARE = 0.1
INTERLEAVED_MIN = 20


def check_interleaved(frame: pd.DataFrame, column: str, source: str) -> None:
    """Refuse contracts that take turns bar after bar (ESH5, ESM5, ESH5, ...): each became
    a series with every other bar, its spacing doubled and windows dropped, in silence
    (issue 42). Bar times both contracts hold (an overlap around a roll) do not count."""
    symbols = pd.factorize(frame["symbol"])[0]
    contracts = pd.factorize(frame[column].astype(str))[0]
    times = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    order = np.lexsort((times, symbols))
    s, t, c = symbols[order], times[order], contracts[order]
    shared = np.zeros(len(s), dtype=bool)  # a time another contract of the symbol also holds
    same = (s[1:] == s[:-1]) & (t[1:] == t[:-1])
    shared[1:] |= same
    shared[:-1] |= same
    alone = np.flatnonzero(~shared)
    turns = (s[alone][1:] == s[alone][:-1]) & (c[alone][1:] != c[alone][:-1])
    per_symbol = np.bincount(s[alone][1:][turns], minlength=s.max() + 1)
    bars = np.bincount(s[alone], minlength=s.max() + 1)
    bad = np.flatnonzero((per_symbol > INTERLEAVED_MIN) & (per_symbol > INTERLEAVED_SHARE * bars))
    if not len(bad):
        return
    first = int(np.flatnonzero(turns & (s[alone][1:] == bad[0]))[0])
    rows = order[alone[first : first + 2]]
    names = frame[column].astype(str).to_numpy()[rows]
    raise DataError(
        f"{source}: symbol {frame['symbol'].iloc[rows[0]]!r} changes contract "
        f"{int(per_symbol[bad[0]])} times in {int(bars[bad[0]])} bars (first {names[0]!r} -> "
        f"{names[1]!r} at {frame['timestamp'].iloc[rows[1]]}): the contracts of column "
        f"{column!r} take turns bar after bar, so each would be a series with gaps at every "
        "other bar; fix the column, or read the bars as one series (--contract-column none)"
    )


def contract_order(frame: pd.DataFrame, column: str) -> np.ndarray:
    """[N] int64: rank of each row's contract among its symbol's, by first bar time (then
    name): sorting on it puts a symbol's contracts in the order they were listed."""
    times = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
    keys = pd.DataFrame(
        {"symbol": frame["symbol"].to_numpy(), "contract": frame[column].astype(str).to_numpy()}
    )
    first = pd.Series(times).groupby([keys["symbol"], keys["contract"]]).transform("min")
    table = keys.assign(first=first.to_numpy()).drop_duplicates(["symbol", "contract"])
    table = table.sort_values(["symbol", "first", "contract"])
    table["rank"] = table.groupby("symbol").cumcount()
    ranks = keys.merge(table, on=["symbol", "contract"], how="left")["rank"]
    return ranks.to_numpy(dtype=np.int64)


def contract_series_starts(
    symbol_codes: np.ndarray, frame: pd.DataFrame, column: str | None
) -> np.ndarray:
    """[N] bool: the row starts a series (a new symbol, or a new contract when `column`)."""
    starts = np.ones(len(symbol_codes), dtype=bool)
    starts[1:] = symbol_codes[1:] != symbol_codes[:-1]
    if column is not None:
        contracts = frame[column].astype(str).to_numpy()
        starts[1:] |= contracts[1:] != contracts[:-1]
    return starts


#: A step longer than this many median bar spacings ends a session (for the roll day).
SESSION_GAP_FACTOR = 1.5


def sessions(times_ns: np.ndarray) -> np.ndarray:
    """[N] int64 session number of each time: sessions are runs of bars between steps longer
    than SESSION_GAP_FACTOR x the median bar spacing (the daily break, a weekend)."""
    distinct = np.unique(times_ns)
    steps = np.diff(distinct)
    spacing = np.median(steps) if len(steps) else 0
    number = np.concatenate([[0], np.cumsum(steps > SESSION_GAP_FACTOR * spacing)])
    return number[np.searchsorted(distinct, times_ns)]


def _active(volume: pd.DataFrame) -> np.ndarray:
    """[sessions] position of the contract the series holds in each session (its columns
    are contracts in listing order): the next one from the first session it out-trades it."""
    table = volume.to_numpy()
    active, chosen = 0, np.empty(len(table), dtype=np.int64)
    for i, row in enumerate(table):
        # roll on to the next contract (more than one if a contract was skipped over)
        while active + 1 < len(row) and row[active + 1] > row[active]:
            active += 1
        chosen[i] = active
    return chosen


def _symbol_series(bars: pd.DataFrame, column: str, symbol: str) -> tuple[pd.DataFrame, list[Roll]]:
    """One symbol's bars (sorted by contract order, then time) -> its continuous series."""
    first = bars.groupby(column, sort=False)["timestamp"].min().sort_values(kind="stable")
    session = sessions(pd.DatetimeIndex(bars["timestamp"]).as_unit("ns").asi8)
    keys = [pd.Series(session, index=bars.index, name="session"), bars[column]]
    volume = bars["volume"].groupby(keys).sum().unstack()  # [sessions, contracts]
    volume = volume.reindex(columns=first.index).fillna(0.0).sort_index()
    held = pd.Series(first.index.to_numpy()[_active(volume)], index=volume.index)
    keep = bars[column].to_numpy() == held.reindex(session).to_numpy()
    series = bars.loc[keep].sort_values("timestamp", kind="stable")
    contracts = series[column].to_numpy()
    switches = np.flatnonzero(contracts[1:] != contracts[:-1]) + 1
    rolls = []
    for row in switches:
        old, new = contracts[row - 1], contracts[row]
        at = series["timestamp"].iloc[row]
        old_bars = bars[(bars[column] == old) & (bars["timestamp"] < at)].set_index("timestamp")
        new_bars = bars[(bars[column] == new) & (bars["timestamp"] <= at)].set_index("timestamp")
        common = old_bars.index.intersection(new_bars.index[new_bars.index < at])
        if len(common):  # the same bar in both contracts: the gap is the spread itself
            ref = common.max()
            old_price, new_price = old_bars.at[ref, "close"], new_bars.at[ref, "close"]
        else:  # no overlap: the old contract's last close against the new one's first open
            ref = old_bars.index.max()
            old_price, new_price = old_bars.at[ref, "close"], new_bars.at[at, "open"]
        rolls.append(
            Roll(
                symbol=symbol,
                timestamp=at,
                old=str(old),
                new=str(new),
                reference=ref,
                gap=float(new_price - old_price),
                ratio=float(new_price / old_price),
            )
        )
    return series, rolls


def contract_rolls(frame: pd.DataFrame, column: str) -> list[Roll]:
    """The rolls a back-adjusted series of this validated frame would make (for reports)."""
    return [
        r for s, bars in frame.groupby("symbol") for r in _symbol_series(bars, column, str(s))[1]
    ]


def back_adjust(
    frame: pd.DataFrame, column: str, method: str, *, source: str
) -> tuple[pd.DataFrame, list[Roll]]:
    """A validated frame with a contract column -> one back-adjusted series per symbol,
    sorted by symbol and time (the contract column kept), and the rolls made."""
    parts, rolls = [], []
    for symbol, bars in frame.groupby("symbol", sort=True):
        series, found = _symbol_series(bars, column, str(symbol))
        prices = series[list(PRICES)].to_numpy(dtype=np.float64)
        times = pd.DatetimeIndex(series["timestamp"]).as_unit("ns").asi8
        for roll in found:  # every price before a roll, by that roll's gap
            before = times < roll.timestamp.value
            if method == "ratio":
                prices[before] *= roll.ratio
            else:
                prices[before] += roll.gap
        if (prices <= 0).any():
            raise DataError(
                f"{source}: difference back-adjustment of {symbol!r} makes prices <= 0 "
                "(the rolls' gaps add up to more than the early prices); use --roll-adjust ratio"
            )
        series = series.copy()
        series[list(PRICES)] = prices
        parts.append(series)
        rolls += found
    out = pd.concat(parts, ignore_index=True)
    out.attrs = dict(frame.attrs)
    return out, rolls
