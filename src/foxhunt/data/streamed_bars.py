"""A new run's bars read, validated and fitted a symbol at a time (issue 41): what
`new_run.fit_new_run` gives of the whole frame, without ever holding it.

1. Each symbol's bars are read (`symbol_reader.symbol_chunks`), validated by the same code
   as the whole frame (`series.validated_series`: every check is within a symbol, so its
   rows sorted come out as the whole frame's do) and kept in a scratch file of the store's
   staging folder; the [N] vectors (times, symbol and series codes, high and low) stay.
2. What needs every symbol is gathered on the way: the distinct times (the split cuts,
   `windows.distinct_cuts`), the spacings between bars (their median, from counts), the
   longest series and the symbols (the encoder, the calendar).
3. The feature state is fitted on each symbol's training rows and joined
   (`fitting.merge_states`): the per-symbol tables are the whole frame's, row for row.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from foxhunt.data.config import DataConfig
from foxhunt.data.contracts import contract_series_starts, find_contract_column
from foxhunt.data.features import FeatureSpec
from foxhunt.data.features.fitting import fit_feature_state, merge_states
from foxhunt.data.fit import new_run_calendar
from foxhunt.data.io import timezone_name
from foxhunt.data.new_run import row_splits, validated_bars
from foxhunt.data.scaling import CategoryEncoder
from foxhunt.data.symbol_reader import symbol_chunks
from foxhunt.data.windows import distinct_cuts


@dataclass(frozen=True)
class SymbolBars:
    """Validated bars, a symbol per scratch file, the [N] vectors the windows need and what
    was fitted on them (in symbol code order)."""

    source: str
    spec: FeatureSpec  # with its calendar and the feature state fitted on the training rows
    symbols: CategoryEncoder
    codes: np.ndarray  # [N] symbol codes, non-decreasing
    series: np.ndarray  # [N] series codes (a symbol, or one per contract), non-decreasing
    times: pd.DatetimeIndex  # [N] "timestamp", in the bars' zone
    high_low: pd.DataFrame  # [N] high and low: the range loss's targets
    cuts: np.ndarray  # the split times of all the bars
    spacing_ns: int
    timezone: str
    ranges: list[tuple[int, int]]  # each symbol's [first, stop) rows
    files: tuple[Path, ...]  # each symbol's validated rows

    def frame(self, code: int) -> pd.DataFrame:
        """Symbol `code`'s validated rows, indexed as in the whole frame."""
        first, stop = self.ranges[code]
        frame: pd.DataFrame = pd.read_pickle(self.files[code])
        frame.index = pd.RangeIndex(first, stop)
        return frame

    def close(self) -> None:
        for file in self.files:
            file.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Part:
    """One symbol's validated rows in `file` and its vectors."""

    file: Path
    times_ns: np.ndarray
    series: np.ndarray  # from 0 within the symbol
    high: np.ndarray
    low: np.ndarray
    tz: object
    contracts: str | None


def read_new_run(folder: Path, config: DataConfig, spec: FeatureSpec, min_rows: int) -> SymbolBars:
    """The bars of `config` read, validated and fitted a symbol at a time, each symbol's
    rows in a scratch file in `folder`."""
    parts: dict[str, _Part] = {}
    source = str(config.path)
    for chunk in symbol_chunks(config):
        source = str(chunk.attrs.get("source", config.path))
        valid, contracts = validated_bars(chunk, config, spec, source, min_rows)
        del chunk
        symbols = valid["symbol"].to_numpy()
        edges = np.flatnonzero(symbols[1:] != symbols[:-1]) + 1  # sorted by symbol
        for lo, hi in itertools.pairwise([0, *edges.tolist(), len(valid)]):
            part = valid.iloc[lo:hi].reset_index(drop=True)
            parts[str(symbols[lo])] = _keep(part, folder / f"bars-{len(parts)}.pkl", contracts)
        del valid
    names = sorted(parts)
    ordered = [parts[name] for name in names]
    return _fitted(ordered, names, config, spec, source)


def _keep(part: pd.DataFrame, file: Path, contracts: str | None) -> _Part:
    part.to_pickle(file)
    times = pd.DatetimeIndex(part["timestamp"])
    starts = contract_series_starts(np.zeros(len(part), np.int64), part, contracts)
    return _Part(
        file=file,
        times_ns=times.as_unit("ns").asi8,
        series=np.cumsum(starts) - 1,
        high=part["high"].to_numpy(np.float64),
        low=part["low"].to_numpy(np.float64),
        tz=times.tz,
        contracts=contracts,
    )


def _median_spacing(parts: list[_Part]) -> int:
    """`windows.median_spacing_ns` of all the bars, from each symbol's counts of spacings."""
    values, counts = [], []
    for part in parts:
        same = part.series[1:] == part.series[:-1]
        value, count = np.unique(np.diff(part.times_ns)[same], return_counts=True)
        values.append(value)
        counts.append(count)
    value, where = np.unique(np.concatenate(values), return_inverse=True)
    count = np.bincount(where, weights=np.concatenate(counts)).astype(np.int64)
    n = int(count.sum())
    if n == 0:
        return 0
    cumulative = np.cumsum(count)
    middle = value[np.searchsorted(cumulative, [(n - 1) // 2, n // 2], side="right")]
    # np.median's numbers: the mean of the middle one or two, in float64
    return int(np.median(middle if n % 2 == 0 else middle[:1]))


def _fitted(
    parts: list[_Part], names: list[str], config: DataConfig, spec: FeatureSpec, source: str
) -> SymbolBars:
    tz = parts[0].tz
    timezone = timezone_name(tz)  # type: ignore[arg-type]
    spec = replace(spec, calendar=new_run_calendar(config, pd.DataFrame({"symbol": names}), source))
    lengths = [len(p.times_ns) for p in parts]
    ranges = list(itertools.pairwise(np.cumsum([0, *lengths]).tolist()))
    offsets = np.cumsum([0, *(int(p.series[-1]) + 1 for p in parts)])
    series = np.concatenate([p.series + offsets[i] for i, p in enumerate(parts)])
    times_ns = np.concatenate([p.times_ns for p in parts])
    cuts = row_splits(times_ns[:0], config)[0]  # a walk-forward fold's explicit bounds
    if config.split is None:
        distinct = functools.reduce(np.union1d, (np.unique(p.times_ns) for p in parts))
        cuts = distinct_cuts(distinct, config.val_fraction, config.test_fraction)
    spacing = _median_spacing(parts)
    bars = SymbolBars(
        source=source,
        spec=spec,
        symbols=CategoryEncoder.fit("symbol", names),
        codes=np.repeat(np.arange(len(parts), dtype=np.int64), lengths),
        series=series,
        times=pd.DatetimeIndex(times_ns.view("M8[ns]"), name="timestamp")
        .tz_localize("UTC")
        .tz_convert(tz),  # type: ignore[arg-type]
        high_low=_high_low(parts, source),
        cuts=cuts,
        spacing_ns=spacing,
        timezone=timezone,
        ranges=ranges,
        files=tuple(p.file for p in parts),
    )
    longest = int(np.bincount(series).max())
    states = []
    for code, part in enumerate(parts):
        frame = bars.frame(code)
        states.append(
            fit_feature_state(
                frame,
                spec,
                series_codes=part.series,
                train=row_splits(part.times_ns, config, cuts)[1] == 0,
                timezone=timezone,
                spacing_ns=spacing,
                contract_column=find_contract_column(frame, config.contract_column, source),
                longest=longest,
            )
        )
    return replace(bars, spec=merge_states(spec, states))


def _high_low(parts: list[_Part], source: str) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "high": np.concatenate([p.high for p in parts]),
            "low": np.concatenate([p.low for p in parts]),
        }
    )
    frame.attrs["source"] = source
    return frame
