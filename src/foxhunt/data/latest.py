"""The input of a forecast: each symbol's latest `lookback` bars and the known inputs of the
next H bars, transformed by a run's fitted `Preprocessor` exactly as training did."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from foxhunt.batch import TFTBatch
from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.features import known_calendar, series_starts
from foxhunt.data.features.compute import row_contracts
from foxhunt.data.footprint import check_matrix_fits
from foxhunt.data.future import forecast_times, future_known_values
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.volatility import BaselineRows, minute_of_day
from foxhunt.data.windows import gap_flags
from foxhunt.errors import DataError

log = logging.getLogger("foxhunt.data")


@dataclass(frozen=True)
class LatestWindows:
    """The latest lookback bars of each symbol, ready to forecast the next H bars."""

    batch: TFTBatch  # target None; anchor = row of each symbol's last bar
    symbols: tuple[str, ...]  # [B]
    last_timestamps: pd.DatetimeIndex  # [B] time of the last observed bar
    forecast_timestamps: tuple[
        pd.DatetimeIndex, ...
    ]  # [B] x [H], on the calendar (or extrapolated)

    def timestamps_for(self, index: int) -> pd.DatetimeIndex:
        """Times of the H forecast bars of batch row `index`."""
        return self.forecast_timestamps[index]


def latest_windows(
    pre: Preprocessor, frame: pd.DataFrame, future: pd.DataFrame | None = None
) -> LatestWindows:
    """The latest `lookback` bars of each symbol and the known inputs of the next H bars.

    Future times are the next bars that trade on the run's calendar (without one,
    extrapolated from the training bar spacing); user `known_columns` come from `future`
    (normalized rows by timestamp and symbol), refused without it (data/future.py).
    Anchors are rows of `frame` sorted by symbol and time.
    """
    source = str(frame.attrs.get("source", "the bars frame"))
    check_matrix_fits(len(frame), pre.spec, source=source, store=None, reading="predict")
    encoded = pre.encode(frame, min_rows=pre.lookback)

    def scaled(rows: np.ndarray) -> np.ndarray:
        return pre.scaler.transform(encoded.features.inputs[rows], codes=encoded.symbol_codes[rows])

    return latest_of(pre, encoded, future, scaled)


def latest_rows(encoded: EncodedFrame, lookback: int) -> np.ndarray:
    """[B, L] the rows of each symbol's latest `lookback` bars."""
    ends = np.flatnonzero(np.append(series_starts(encoded.symbol_codes)[1:], True))  # [B]
    return ends[:, None] + np.arange(-lookback + 1, 1)


def latest_of(
    pre: Preprocessor,
    encoded: EncodedFrame,
    future: pd.DataFrame | None,
    scaled: Callable[[np.ndarray], np.ndarray],
) -> LatestWindows:
    """`latest_windows` of bars already encoded; `scaled(rows)` [B, L, P] the scaled inputs
    of rows [B, L] (computed here, or read from a feature store: data/stored_windows.py)."""
    rows = latest_rows(encoded, pre.lookback)
    ends = rows[:, -1]
    baseline = pre.baseline(encoded)
    _check_latest(pre, encoded, rows, baseline)
    future_inputs, future_times = _future_known(pre, encoded, ends, future)
    past = scaled(rows)
    scale = signal = None
    if baseline is not None and baseline.signal is not None:
        signal = torch.from_numpy(baseline.signal[ends][:, None].astype(np.float32))
    if baseline is not None and pre.profile is not None:  # next H bars' profile
        minutes = minute_of_day(pd.DatetimeIndex(np.concatenate(future_times)), pre.timezone)
        codes = np.repeat(encoded.symbol_codes[ends], pre.horizon)  # [B*H], symbol-major
        future_profile = pre.profile(minutes, codes).reshape(len(ends), pre.horizon)
        scale = baseline.volatility[ends][:, None] * future_profile  # [B, H]
        scale = torch.from_numpy(scale.astype(np.float32))
    last_codes = torch.from_numpy(encoded.symbol_codes[ends].astype(np.int64))
    table = pre.static_values()
    batch = TFTBatch(
        static=torch.zeros(len(ends), 0) if table is None else table.index_select(0, last_codes),
        past=torch.from_numpy(past),
        future=torch.from_numpy(future_inputs),
        static_categorical=torch.from_numpy(encoded.symbol_codes[ends][:, None].copy()),
        anchor=torch.from_numpy(ends.astype(np.int64)),
        scale=scale,
        vol_signal=signal,
    )
    names = tuple(pre.symbols.categories[c] for c in encoded.symbol_codes[ends])
    return LatestWindows(batch, names, encoded.times[ends], future_times)


def _check_latest(
    pre: Preprocessor, encoded: EncodedFrame, rows: np.ndarray, baseline: BaselineRows | None
) -> None:
    """Each symbol's last L rows are its own and complete; warn if a gap lies inside."""
    source = encoded.frame.attrs.get("source")
    codes = encoded.series_codes  # the last rows of the symbol's latest contract
    complete = (codes[rows] == codes[rows[:, -1:]]).all(1) & encoded.finite[rows].all(1)
    if baseline is not None:
        complete &= baseline.ready[rows[:, -1]]
    for b in np.flatnonzero(~complete):
        name = pre.symbols.categories[encoded.symbol_codes[rows[b, -1]]]
        raise DataError(
            f"{source}: symbol {name!r} has {int((codes == codes[rows[b, -1]]).sum())} bars; "
            f"a forecast needs its last {pre.lookback} with complete features, i.e. about "
            f"{pre.lookback + max(pre.spec.warmup_bars, pre.baseline_window)} bars"
        )
    gaps = gap_flags(codes, pre.gap_times(encoded), pre.max_gap_ns)
    if gaps[rows[:, 1:]].any():
        log.warning("%s: the latest %d bars hold a gap over %s", source, pre.lookback, pre.max_gap)


def _future_known(
    pre: Preprocessor, encoded: EncodedFrame, ends: np.ndarray, future: pd.DataFrame | None
) -> tuple[np.ndarray, tuple[pd.DatetimeIndex, ...]]:
    """Scaled known inputs [B, H, F] at the next H bar times, and those times."""
    symbols = tuple(pre.symbols.categories[c] for c in encoded.symbol_codes[ends])
    times_ns = forecast_times(  # [B, H], each symbol on its own calendar
        encoded.times_ns[ends],
        spacing_ns=pre.bar_spacing_ns,
        horizon=pre.horizon,
        calendar=pre.spec.calendar,
        symbols=symbols,
    )
    times = pd.DatetimeIndex(times_ns.ravel()).tz_localize("UTC").tz_convert(encoded.times.tz)
    row_symbols = np.repeat(np.asarray(symbols, dtype=object), pre.horizon)  # symbol-major
    contracts = row_contracts(encoded.frame, pre.spec)  # a forecast bar's: its anchor's
    future_contracts = None if contracts is None else np.repeat(contracts[ends], pre.horizon)
    known = [
        known_calendar(times, pre.spec, pre.timezone, row_symbols, future_contracts),
        future_known_values(future, pre.spec.known_columns, symbols, times_ns),
    ]
    future_inputs = np.concatenate(known, axis=1).reshape(len(ends), pre.horizon, -1)
    codes = np.repeat(encoded.symbol_codes[ends][:, None], pre.horizon, axis=1)  # [B, H]
    scaled = pre.scaler.transform(
        future_inputs, slice(encoded.features.num_observed, None), codes=codes
    )
    h = pre.horizon
    return scaled, tuple(times[b * h : (b + 1) * h] for b in range(len(ends)))
