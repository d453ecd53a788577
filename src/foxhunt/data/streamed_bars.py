"""A new run's bars read, validated and fitted a symbol at a time (issue 41): what
`new_run.fit_new_run` gives of the whole frame, without ever holding it.

1. Each symbol's bars are read (`symbol_reader.symbol_chunks`), validated by the same code
   as the whole frame (`series.validated_series`: every check is within a symbol, so its
   rows sorted come out as the whole frame's do) and kept in scratch files of the store's
   staging folder: its rows and its [n] vectors (times, series codes, high and low).
2. What needs every symbol is gathered on the way: the distinct times (the split cuts,
   `windows.distinct_cuts`), the spacings between bars (their median, from counts), the
   longest series and the symbols (the encoder, the calendar).
3. The feature state is fitted on each symbol's training rows and joined
   (`fitting.merge_states`): the per-symbol tables are the whole frame's, row for row.
"""

from __future__ import annotations

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
    """Validated bars, a symbol per scratch file (its rows and its [n] vectors), and what
    was fitted on them (in symbol code order). Nothing of it grows with the number of bars
    but `cuts`' distinct times, gathered on the way."""

    source: str
    spec: FeatureSpec  # with its calendar and the feature state fitted on the training rows
    symbols: CategoryEncoder
    cuts: np.ndarray  # the split times of all the bars
    spacing_ns: int
    timezone: str
    tz: object  # the bars' zone, as pandas holds it
    ranges: list[tuple[int, int]]  # each symbol's [first, stop) rows
    series_offsets: tuple[int, ...]  # each symbol's first series code
    files: tuple[Path, ...]  # each symbol's validated rows
    vectors: tuple[Path, ...]  # each symbol's [n] vectors (`SymbolRows`)

    def frame(self, code: int) -> pd.DataFrame:
        """Symbol `code`'s validated rows, indexed as in the whole frame."""
        first, stop = self.ranges[code]
        frame: pd.DataFrame = pd.read_pickle(self.files[code])
        frame.index = pd.RangeIndex(first, stop)
        return frame

    def rows(self, code: int) -> SymbolRows:
        """Symbol `code`'s [n] vectors, its series codes numbered as in the whole frame."""
        with np.load(self.vectors[code]) as saved:
            return SymbolRows(
                times_ns=saved["times_ns"],
                series=saved["series"] + self.series_offsets[code],
                high=saved["high"],
                low=saved["low"],
            )

    def times(self, times_ns: np.ndarray) -> pd.DatetimeIndex:
        """`times_ns` as the whole frame's "timestamp" index (in the bars' zone)."""
        utc = pd.DatetimeIndex(times_ns.view("M8[ns]"), name="timestamp").tz_localize("UTC")
        return utc.tz_convert(self.tz)  # type: ignore[arg-type]

    def close(self) -> None:
        for file in (*self.files, *self.vectors):
            file.unlink(missing_ok=True)


@dataclass(frozen=True)
class SymbolRows:
    """One symbol's [n] vectors."""

    times_ns: np.ndarray
    series: np.ndarray
    high: np.ndarray
    low: np.ndarray


@dataclass(frozen=True)
class _Part:
    """One symbol's validated rows in `file`, its vectors in `vectors`, and what the
    whole frame's fit needs of them."""

    file: Path
    vectors: Path
    rows: int
    series: int  # its number of series
    longest: int  # its longest series
    spacings: tuple[np.ndarray, np.ndarray]  # distinct spacings between its bars, and counts
    tz: object
    contracts: str | None


def read_new_run(folder: Path, config: DataConfig, spec: FeatureSpec, min_rows: int) -> SymbolBars:
    """The bars of `config` read, validated and fitted a symbol at a time, each symbol's
    rows and vectors in scratch files in `folder`."""
    parts: dict[str, _Part] = {}
    distinct = np.zeros(0, np.int64)  # the distinct times of all the bars: the split cuts
    source = str(config.path)
    for chunk in symbol_chunks(config):
        source = str(chunk.attrs.get("source", config.path))
        valid, contracts = validated_bars(chunk, config, spec, source, min_rows)
        del chunk
        symbols = valid["symbol"].to_numpy()
        edges = np.flatnonzero(symbols[1:] != symbols[:-1]) + 1  # sorted by symbol
        for lo, hi in itertools.pairwise([0, *edges.tolist(), len(valid)]):
            part = valid.iloc[lo:hi].reset_index(drop=True)
            stem = folder / f"bars-{len(parts)}"
            parts[str(symbols[lo])], times_ns = _keep(part, stem, contracts)
            if config.split is None:
                distinct = np.union1d(distinct, times_ns)
        del valid
    names = sorted(parts)
    ordered = [parts[name] for name in names]
    return _fitted(ordered, names, config, spec, source, distinct)


def _keep(part: pd.DataFrame, stem: Path, contracts: str | None) -> tuple[_Part, np.ndarray]:
    """`part` (one symbol's rows) and its vectors into scratch files; its times."""
    file, vectors = stem.with_suffix(".pkl"), stem.with_suffix(".npz")
    part.to_pickle(file)
    times = pd.DatetimeIndex(part["timestamp"])
    starts = contract_series_starts(np.zeros(len(part), np.int64), part, contracts)
    series = np.cumsum(starts) - 1
    times_ns = times.as_unit("ns").asi8
    high, low = part["high"].to_numpy(np.float64), part["low"].to_numpy(np.float64)
    np.savez(vectors, times_ns=times_ns, series=series, high=high, low=low)
    same = series[1:] == series[:-1]
    kept = _Part(
        file=file,
        vectors=vectors,
        rows=len(part),
        series=int(series[-1]) + 1,
        longest=int(np.bincount(series).max()),
        spacings=np.unique(np.diff(times_ns)[same], return_counts=True),
        tz=times.tz,
        contracts=contracts,
    )
    return kept, times_ns


def _median_spacing(parts: list[_Part]) -> int:
    """`windows.median_spacing_ns` of all the bars, from each symbol's counts of spacings."""
    values = [part.spacings[0] for part in parts]
    counts = [part.spacings[1] for part in parts]
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
    parts: list[_Part],
    names: list[str],
    config: DataConfig,
    spec: FeatureSpec,
    source: str,
    distinct: np.ndarray,
) -> SymbolBars:
    tz = parts[0].tz
    timezone = timezone_name(tz)  # type: ignore[arg-type]
    spec = replace(spec, calendar=new_run_calendar(config, pd.DataFrame({"symbol": names}), source))
    ranges = list(itertools.pairwise(np.cumsum([0, *(p.rows for p in parts)]).tolist()))
    offsets = np.cumsum([0, *(p.series for p in parts)])[:-1].tolist()
    cuts = row_splits(np.zeros(0, np.int64), config)[0]  # a walk-forward fold's explicit bounds
    if config.split is None:
        cuts = distinct_cuts(distinct, config.val_fraction, config.test_fraction)
    spacing = _median_spacing(parts)
    bars = SymbolBars(
        source=source,
        spec=spec,
        symbols=CategoryEncoder.fit("symbol", names),
        cuts=cuts,
        spacing_ns=spacing,
        timezone=timezone,
        tz=tz,
        ranges=ranges,
        series_offsets=tuple(offsets),
        files=tuple(p.file for p in parts),
        vectors=tuple(p.vectors for p in parts),
    )
    longest = max(p.longest for p in parts)
    states = []
    for code in range(len(parts)):
        frame = bars.frame(code)
        rows = bars.rows(code)
        states.append(
            fit_feature_state(
                frame,
                spec,
                series_codes=rows.series - offsets[code],
                train=row_splits(rows.times_ns, config, cuts)[1] == 0,
                timezone=timezone,
                spacing_ns=spacing,
                contract_column=find_contract_column(frame, config.contract_column, source),
                longest=longest,
            )
        )
    return replace(bars, spec=merge_states(spec, states))
