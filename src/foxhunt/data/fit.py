"""Fitting a new run's preprocessing on its training rows, and checking a saved one serves a
config: the max gap resolved, the calendar chosen, scalers and the volatility profile fitted."""

from __future__ import annotations

import numpy as np
import pandas as pd

from foxhunt.data.calendar import NONE, Calendar, calendar_for
from foxhunt.data.calendar_setting import resolve_calendar, setting_table
from foxhunt.data.config import DataConfig, parse_max_gap
from foxhunt.data.encoded import EncodedFrame
from foxhunt.data.features import FeatureSpec
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.scaling import CategoryEncoder, StandardScaler, TargetScaler
from foxhunt.data.volatility import IntradayProfile, minute_of_day
from foxhunt.data.windows import gap_flags
from foxhunt.errors import ConfigError, DataError

AUTO_GAP_FACTOR = 1.5


def resolve_max_gap(max_gap: str | None, spacing_ns: int) -> int | None:
    gap = parse_max_gap(max_gap)
    if gap is None:
        return None
    if isinstance(gap, str):  # "auto"
        return int(AUTO_GAP_FACTOR * spacing_ns)
    return int(gap.value)


def new_run_calendar(config: DataConfig, frame: pd.DataFrame, source: str) -> Calendar:
    """The calendar of a new run: "auto" infers one for a bars file; the built-in synthetic
    bars follow the Globex hours but no holidays, so they get none unless one is named."""
    setting = NONE if config.path is None and config.calendar == "auto" else config.calendar
    name = resolve_calendar(setting, frame["symbol"].unique(), source)
    if name is None and config.cross_breaks:
        raise ConfigError(
            f"{source}: cross_breaks needs a calendar and none is known for these symbols; "
            "name one with --calendar NAME (docs/calendars.md)"
        )
    return name


def fit_preprocessor(
    encoded: EncodedFrame,
    splits: np.ndarray,
    config: DataConfig,
    *,
    spec: FeatureSpec,
    clock_ns: np.ndarray,
    max_gap_ns: int | None,
    bar_spacing_ns: int,
    timezone: str,
    symbols: CategoryEncoder,
    scaler: StandardScaler | None = None,
) -> Preprocessor:
    """Scalers and the intraday volatility profile fitted on the training rows only;
    `scaler`: the input scaler fitted already (on those rows, a symbol at a time: the inputs
    are not in `encoded`, streamed.py)."""
    train = (splits == 0) & encoded.finite
    _check_every_symbol_trains(encoded, splits, train, symbols)
    names = (*spec.observed_names, *spec.known_names)
    # training returns, less those spanning a gap over max_gap: never a target, and a
    # return over the nightly break or a weekend is not one bar's worth of volatility
    gaps = gap_flags(encoded.series_codes, clock_ns, max_gap_ns)
    returns = np.where(gaps, np.nan, encoded.features.returns)[splits == 0]
    profile = IntradayProfile.fit_per_symbol(  # each instrument's own session shape
        returns,
        minute_of_day(encoded.times[splits == 0], timezone),
        encoded.symbol_codes[splits == 0],
        symbols=symbols.cardinality,
        bucket_minutes=round(bar_spacing_ns / 60e9),
    )
    return new_preprocessor(
        config,
        spec=spec,
        scaler=scaler
        or StandardScaler.fit(
            names,
            encoded.features.inputs,
            encoded.symbol_codes,
            symbols.cardinality,
            rows=train,  # no copy of every training row: one symbol's at a time
        ),
        target_scaler=TargetScaler.fit(encoded.features.returns[train]),
        profile=profile,
        max_gap_ns=max_gap_ns,
        bar_spacing_ns=bar_spacing_ns,
        timezone=timezone,
        symbols=symbols,
    )


def new_preprocessor(
    config: DataConfig,
    *,
    spec: FeatureSpec,
    scaler: StandardScaler,
    target_scaler: TargetScaler,
    profile: IntradayProfile,
    max_gap_ns: int | None,
    bar_spacing_ns: int,
    timezone: str,
    symbols: CategoryEncoder,
) -> Preprocessor:
    """A new run's preprocessor of what was fitted on its training rows (here, or a symbol at
    a time: data/symbol_plan.py)."""
    return Preprocessor(
        spec=spec,
        lookback=config.lookback,
        horizon=config.horizon,
        scaler=scaler,
        target_scaler=target_scaler,
        max_gap_ns=max_gap_ns,
        bar_spacing_ns=bar_spacing_ns,
        timezone=timezone,
        symbols=symbols,
        profile=profile,
        baseline_window=config.baseline_window,
        fast_window=config.fast_window,
        contract_column=config.contract_column,
        roll_adjust=config.roll_adjust,
        cross_breaks=config.cross_breaks,
    )


def _check_every_symbol_trains(
    encoded: EncodedFrame, splits: np.ndarray, train: np.ndarray, symbols: CategoryEncoder
) -> None:
    """Refuse a symbol without a finite training row (issue 42): it was kept with every
    symbol's scaler statistics and an untrained embedding, and forecast without a word."""
    trained = np.bincount(encoded.symbol_codes[train], minlength=symbols.cardinality) > 0
    if trained.all():
        return
    code = int(np.flatnonzero(~trained)[0])
    mine = encoded.symbol_codes == code
    train_times = encoded.times[splits == 0]
    span = f"{train_times.min()} .. {train_times.max()}" if len(train_times) else "empty"
    source = encoded.frame.attrs.get("source", "the bars")
    raise untrained(source, symbols.categories[code], encoded.times[mine].min(), span)


def untrained(source: str, symbol: str, first: pd.Timestamp, span: str) -> DataError:
    """The error of a symbol without a finite training row (`first`: its first bar, `span`:
    the training span of every symbol)."""
    return DataError(
        f"{source}: symbol {symbol!r} has no training bar with complete features (its first "
        f"bar is {first}, the training span {span}): nothing fits its scaler or embedding; "
        "leave it out (--symbols the others) or use bars where it trades earlier"
    )


def check_compatible(preprocessor: Preprocessor, config: DataConfig, spec: FeatureSpec) -> None:
    """A saved preprocessor can only serve a config with the same windows and inputs."""
    found = first_incompatible(preprocessor, config, spec)
    if found is not None:
        name, saved = found
        raise ConfigError(
            f"DataConfig.{name}={getattr(config, name)!r} differs from the saved "
            f"preprocessor ({saved!r}); resume with the data settings of the original run"
        )


def first_incompatible(
    preprocessor: Preprocessor, config: DataConfig, spec: FeatureSpec
) -> tuple[str, object] | None:
    """The first DataConfig field whose value `preprocessor` was not made with, and the
    preprocessor's value; None when it serves `config` (`spec`: the config's inputs)."""
    saved_gap = preprocessor.max_gap
    wanted_ns = resolve_max_gap(config.max_gap, preprocessor.bar_spacing_ns)
    wanted_gap = None if wanted_ns is None else pd.Timedelta(wanted_ns, unit="ns")
    pairs: dict[str, tuple[object, object]] = {
        "lookback": (config.lookback, preprocessor.lookback),
        "horizon": (config.horizon, preprocessor.horizon),
        "volatility_windows": (spec.volatility_windows, preprocessor.spec.volatility_windows),
        "baseline_window": (config.baseline_window, preprocessor.baseline_window),
        "observed_columns": (spec.observed_columns, preprocessor.spec.observed_columns),
        "known_columns": (spec.known_columns, preprocessor.spec.known_columns),
        "feature_groups": (spec.groups, preprocessor.spec.groups),
        "cross_breaks": (config.cross_breaks, preprocessor.cross_breaks),
        "max_gap": (wanted_gap, saved_gap),
        "roll_adjust": (config.roll_adjust, preprocessor.roll_adjust),
    }
    table = setting_table(config.calendar)
    if table is not None:  # the symbols it names must be on the saved run's calendars
        pairs["calendar"] = (
            {s: None if n == NONE else n for s, n in table.items()},
            {s: calendar_for(preprocessor.spec.calendar, s) for s in table},
        )
    elif config.calendar != "auto":  # "auto" takes the saved run's calendar
        pairs["calendar"] = (
            None if config.calendar == NONE else config.calendar,
            preprocessor.spec.calendar,
        )
    for name, (wanted, saved) in pairs.items():
        if wanted != saved and not (name == "max_gap" and config.max_gap == "auto"):
            return name, saved
    return None
