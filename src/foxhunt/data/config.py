"""Data configuration: which bars, how they are cut into windows and split in time."""

# long: one keyword-only dataclass whose documented fields and checks read best together

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, get_args

import pandas as pd

from foxhunt.config_fields import (
    FRACTION,
    SEED,
    Range,
    check_known_fields,
    check_ranges,
    setting,
)
from foxhunt.data.calendar_setting import parse_calendar
from foxhunt.data.features.registry import parse_groups
from foxhunt.data.timesplit import TimeSplit
from foxhunt.errors import ConfigError

#: Names tried, in order and case-insensitively, when `timestamp_column` is None.
TIMESTAMP_CANDIDATES = ("timestamp", "datetime", "date", "time", "ts")
#: Timezone given to naive timestamps when `timezone` is None: futures bars are exchange time.
DEFAULT_TIMEZONE = "America/New_York"

_TUPLE_FIELDS = (
    "observed_columns",
    "known_columns",
    "volatility_windows",
    "feature_groups",
    "synthetic_symbols",
    "symbols",
)
#: Back-adjustments of a continuous series across contract rolls (data/contracts.py).
ROLL_METHODS = ("ratio", "difference")
_RESERVED_COLUMNS = ("timestamp", "symbol")
#: The volatility behind the model's scale (`base`): "auto" chooses among the others.
Base = Literal["auto", "realized_vol", "ewma", "har", "garch_t"]
BASES: tuple[str, ...] = get_args(Base)
#: the feature library's groups a run feeds by default, after today's inputs
DEFAULT_GROUPS = ("activity:12",)
SyntheticMarket = Literal["planted", "garch"]
#: the inputs' type in a feature store (`feature_store_dtype`)
StoreDtype = Literal["float32", "float16"]
SYNTHETIC_MARKETS: tuple[str, ...] = get_args(SyntheticMarket)


def _fail(name: str, value: object, fix: str) -> ConfigError:
    return ConfigError(f"DataConfig.{name}={value!r}: {fix}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_max_gap(value: str | None) -> pd.Timedelta | str | None:
    """ "auto", None, or a positive pandas Timedelta; raises ConfigError otherwise."""
    if value is None or value == "auto":
        return value
    gap: pd.Timedelta | None = None
    if isinstance(value, str):
        try:
            gap = pd.Timedelta(value)
        except (ValueError, TypeError):
            gap = None
    if gap is None or pd.isna(gap) or gap <= pd.Timedelta(0):
        raise _fail("max_gap", value, 'use a positive duration such as "10min", "auto" or None')
    return gap


def parse_bound(value: str | None, timezone: str | None, name: str) -> pd.Timestamp | None:
    """A tz-aware time bound: naive text is read in `timezone` (default America/New_York)."""
    if value is None:
        return None
    stamp = None
    if isinstance(value, str):
        try:
            stamp = pd.Timestamp(value)
        except (ValueError, TypeError):
            stamp = None
    if stamp is None or pd.isna(stamp):
        raise _fail(name, value, "use a time such as '2026-03-02 18:00' (or with a UTC offset)")
    if stamp.tzinfo is None:
        try:
            stamp = stamp.tz_localize(timezone or DEFAULT_TIMEZONE)
        except (ValueError, zoneinfo.ZoneInfoNotFoundError) as exc:
            raise _fail(name, value, f"{exc}; give the time with a UTC offset") from None
    return stamp


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Where the bars come from, how windows are cut and how time is split.

    Attributes:
        path: a .parquet/.pq or .csv/.csv.gz file of OHLCV bars, a folder of Parquet files
            (read recursively as one dataset) or a glob of them ("bars/2026-*.parquet"); None
            = built-in synthetic ES-like bars (see `synthetic_*`).
        start: first bar time kept (inclusive), e.g. "2026-03-02 18:00"; naive text is read
            in `timezone` (default America/New_York). Pushed down to the Parquet reader.
            None = from the first bar.
        end: first bar time dropped (exclusive), as `start`; None = to the last bar.
        symbols: instruments kept (exact names of the symbol column), pushed down to the
            Parquet reader; empty = all.
        contract_column: column naming each bar's futures contract ("ESM6") or expiry;
            "auto" = a column called contract or expiry if the file has one; None = ignore
            contracts. Each contract is its own segment: no window and no target return
            crosses a roll (docs/data.md).
        roll_adjust: None = contracts as separate segments; "ratio" or "difference" = one
            back-adjusted continuous series per symbol instead, rolling to the next contract
            on the first day its volume exceeds the current one's (docs/data.md).
        timezone: IANA name. Naive timestamps are localized to it (default America/New_York,
            exchange time); tz-aware ones are converted to it (default: kept as they are).
            Calendar features (minute of day, day of week) are computed in this timezone.
        timestamp_column: name of the time column; None detects one of timestamp, datetime,
            date, time, ts (case-insensitive) or a datetime index.
        symbol_column: column naming the instrument; absent = one series called "default".
        lookback: bars of history each window feeds the encoder (>= 1).
        horizon: bars ahead whose log returns are forecast (>= 1).
        max_gap: largest time allowed between consecutive bars inside a window, as a pandas
            Timedelta string ("10min"); "auto" = 1.5x the median bar spacing, so windows never
            straddle the daily maintenance break or a weekend; None = ignore gaps.
        calendar: exchange calendar of the bars (docs/calendars.md): "auto" = inferred from
            the symbols of a bars file (ES, MES, NQ, MNQ, RTY, YM -> "CME Globex Equity"; CL ->
            "CMEGlobex_Crude"; ZN, ZB, ZF, ZT -> "CME Globex Interest Rate Products"; others,
            and the built-in synthetic bars, none with a warning), "none", or a
            pandas_market_calendars name. With one, forecasts are dated at the next bars that
            trade and the session features (minutes to the close, since the open, early
            close) are known inputs. A mixed file under "auto" gives each symbol its own
            (those it cannot infer: none, one warning). Per symbol: "ES=CME Globex Equity,
            CL=CMEGlobex_Crude" or a dict in YAML / config.json (NAME "none" = no calendar
            for that symbol; a symbol matches its own name or its root, ESM6 -> ES), the
            symbols not named inferred as with "auto"; kept as that text, sorted by symbol.
        cross_breaks: let windows cross the calendar's scheduled closures (daily break,
            weekends, holidays): gaps are then measured in trading time, so only missing bars
            split windows. Needs a calendar; False = every gap over max_gap splits.
        val_fraction: share of the time span (by distinct timestamps) for validation, after
            the training part; in [0, 1).
        test_fraction: share of the time span for the test split, at the end; in [0, 1).
        split: explicit time bounds of train, validation and test with an embargo before the
            test span (`data/timesplit.py`; a walk-forward fold); when set, `val_fraction`
            and `test_fraction` are not used. None = the fractions.
        observed_columns: extra numeric columns of the file, fed as past-only inputs.
        known_columns: extra numeric columns known in advance, fed as past and future inputs.
        volatility_windows: bars of each rolling realized-volatility feature (each >= 2).
        feature_groups: groups of the feature library fed after those inputs, each "name"
            (its default windows) or "name:w1/w2/..." (windows in bars): returns, realized,
            ranges, activity, location, trend, shape, cross (several symbols), cycles
            (known in advance), expiry (known; needs a contract column), instrument
            (static, per symbol); docs/data.md lists their
            inputs and formulas. Default: activity at 12 bars (`volume_vs_minute`, a bar's
            volume against the typical volume of its minute of day, and four more): without
            it the network sees volume with its intraday profile in it, and learned nothing
            of a volume driver on the planted markets (docs/forecasting.md, "Training that
            finds the signal"). Empty = the inputs before the feature library.
            `foxhunt inspect FILE --features` lists every input.
        baseline_window: bars of the rolling volatility behind each window's baseline scale
            (>= 2): the RMS of the last `baseline_window` returns divided by their intraday
            profile, up to the anchor bar; windows anchored in its warm-up are dropped. The
            "baseline" model output forecasts relative to it (see data/volatility.py).
        fast_window: bars of a second, shorter rolling volatility (>= 2 and below
            `baseline_window`; 0 = none). Each window then carries the log ratio of the fast
            to the baseline volatility at its anchor (`TFTBatch.vol_signal`), and the
            "baseline" output learns how far to lean toward the faster estimate: with 16 the
            forecast's scale is about the geometric mean of the two (docs/forecasting.md).
        base: the volatility behind each window's scale, which the "baseline" output starts
            from (docs/forecasting.md, "The base"): "realized_vol" = the rolling RMS of
            `baseline_window` bars; "ewma", "har" or "garch_t" = that baseline fitted on the
            training span (baseline.json) and filtered forward causally, its one-step
            standard deviation in place of the rolling one; "auto" = the one of these four
            whose Gaussian quantiles have the lowest mean quantile loss on the validation
            windows (logged, in metrics.json's `base`), skipping one that cannot be fitted.
            The run saves the base it used; a run saved before this field has "realized_vol".
        feature_store: a folder holding prepared inputs on disk (docs/data.md, "Feature
            store"): the first run with given bars and data settings writes them there (in
            a folder named by a hash of the bars' content, these settings and the feature
            code), later runs asking for the same read them back and gather training windows
            from memory-mapped arrays instead of holding the input matrix. None = prepare in
            memory every run. An fsspec URL (s3://bucket/store, gs://...) keeps the entries
            there, used through a local cache folder ($XDG_CACHE_HOME/foxhunt/feature-store):
            an entry is fetched when the cache lacks it, and one prepared here is uploaded.
        feature_store_dtype: the inputs' type in the feature store: "float32" (the windows
            are the in-memory ones bit for bit) or "float16" (half the disk and the reads;
            each input is the float32 value rounded to float16, a relative error of about
            2e-4 at the median, more for values near 0: docs/data.md). Needs feature_store.
        prepare_workers: processes computing the symbols of a feature store prepared a
            symbol at a time at once (1 = in this process; docs/data.md). Each holds one
            symbol's matrix, so memory grows with it; the store is the same for any number.
        synthetic_market: the built-in bars when `path` is None: "planted" = a planted-signal
            market (data/planted/: volume spikes that lead volatility, a scheduled release on
            Tuesdays and Thursdays at 10:00, a hidden volatility regime that shifts volume,
            and with several symbols the first one's moves leading the others'), whose
            oracle the run's table shows; "garch" = GARCH bars with no driver beyond past
            returns (data/synthetic.py; runs saved before this field).
        synthetic_days: trading sessions of synthetic bars when `path` is None (>= 1); 120
            by default, since 60 held too few planted events for the network to learn them.
        synthetic_seed: seed of the synthetic bars.
        synthetic_symbols: instruments of the synthetic bars.
    """

    path: Path | None = None
    start: str | None = None
    end: str | None = None
    symbols: tuple[str, ...] = ()
    contract_column: str | None = "auto"
    roll_adjust: str | None = None
    timezone: str | None = None
    timestamp_column: str | None = None
    symbol_column: str = "symbol"
    lookback: int = setting(64, range=Range(1, 100_000))
    horizon: int = setting(8, range=Range(1, 10_000))
    max_gap: str | None = "auto"
    calendar: str = "auto"
    cross_breaks: bool = False
    val_fraction: float = setting(0.15, range=FRACTION)
    test_fraction: float = setting(0.15, range=FRACTION)
    split: TimeSplit | None = None
    observed_columns: tuple[str, ...] = ()
    known_columns: tuple[str, ...] = ()
    volatility_windows: tuple[int, ...] = (12, 48)
    feature_groups: tuple[str, ...] = DEFAULT_GROUPS
    baseline_window: int = setting(64, range=Range(2, 100_000))
    fast_window: int = setting(16, range=Range(0, 100_000))
    base: Base = "realized_vol"
    feature_store: str | None = None
    feature_store_dtype: StoreDtype = "float32"
    prepare_workers: int = setting(1, range=Range(1, 256))
    synthetic_market: SyntheticMarket = "planted"
    synthetic_days: int = setting(120, range=Range(1, 10_000))
    synthetic_seed: int = setting(0, range=SEED)
    synthetic_symbols: tuple[str, ...] = ("ES",)

    def __post_init__(self) -> None:
        if self.path is not None and not isinstance(self.path, Path):
            object.__setattr__(self, "path", Path(self.path))
        if isinstance(self.split, dict):  # from config.json
            object.__setattr__(self, "split", TimeSplit.from_dict(self.split))
        if self.split is not None and not isinstance(self.split, TimeSplit):
            raise _fail("split", self.split, "must be a TimeSplit (data/timesplit.py) or None")
        for name in _TUPLE_FIELDS:  # lists (from JSON or a CLI) become tuples
            object.__setattr__(self, name, tuple(getattr(self, name)))
        self._check_names()
        for name, low in (
            ("lookback", 1),
            ("horizon", 1),
            ("synthetic_days", 1),
            ("baseline_window", 2),
        ):
            value = getattr(self, name)
            if not _is_int(value) or value < low:
                raise _fail(name, value, f"must be an integer >= {low}")
        if not _is_int(self.synthetic_seed):
            raise _fail("synthetic_seed", self.synthetic_seed, "must be an integer")
        parse_max_gap(self.max_gap)
        start = parse_bound(self.start, self.timezone, "start")
        end = parse_bound(self.end, self.timezone, "end")
        if start is not None and end is not None and start >= end:
            raise _fail("end", self.end, f"must be after start = {self.start!r}")
        if self.roll_adjust is not None and self.roll_adjust not in ROLL_METHODS:
            raise _fail("roll_adjust", self.roll_adjust, f"use one of {ROLL_METHODS} or None")
        if self.roll_adjust is not None and self.contract_column is None:
            raise _fail("roll_adjust", self.roll_adjust, "needs a contract_column")
        # a per-symbol mapping (a dict from YAML/JSON, or "SYM=NAME,...") becomes sorted text
        object.__setattr__(self, "calendar", parse_calendar(self.calendar))
        if not isinstance(self.cross_breaks, bool):
            raise _fail("cross_breaks", self.cross_breaks, "must be true or false")
        if self.cross_breaks and self.calendar == "none":
            raise _fail("cross_breaks", True, "needs a calendar: set calendar (--calendar NAME)")
        self._check_windows()
        self._check_store()
        check_ranges(self, "DataConfig")  # the upper bounds the checks leave

    def _check_windows(self) -> None:
        """The splits' shares, the volatility windows, the base and the feature groups."""
        for name in ("val_fraction", "test_fraction"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value < 1.0:
                raise _fail(name, value, "must be a number in [0, 1)")
        if self.val_fraction + self.test_fraction >= 1.0:
            raise _fail(
                "val_fraction",
                self.val_fraction,
                f"val_fraction + test_fraction (= {self.val_fraction + self.test_fraction:g}) "
                "must leave time for training: keep the sum below 1",
            )
        fast = self.fast_window
        if not _is_int(fast) or fast < 0 or fast == 1 or fast >= self.baseline_window:
            raise _fail(
                "fast_window",
                fast,
                f"must be 0 (none) or an integer in [2, baseline_window = {self.baseline_window})",
            )
        if self.base not in BASES:
            raise _fail("base", self.base, f"use one of {', '.join(BASES)}")
        if self.synthetic_market not in SYNTHETIC_MARKETS:
            raise _fail(
                "synthetic_market", self.synthetic_market, f"use one of {SYNTHETIC_MARKETS}"
            )
        windows = self.volatility_windows
        if any(not _is_int(w) or w < 2 for w in windows) or len(set(windows)) != len(windows):
            raise _fail("volatility_windows", windows, "use distinct integers >= 2, e.g. (12, 48)")
        parse_groups(self.feature_groups)  # ConfigError naming the field and the entry

    def _check_store(self) -> None:
        store, dtype = self.feature_store, self.feature_store_dtype
        if dtype not in get_args(StoreDtype):
            raise _fail("feature_store_dtype", dtype, f"use one of {get_args(StoreDtype)}")
        if store is None:
            if dtype != "float32":
                raise _fail("feature_store_dtype", dtype, "needs feature_store (--feature-store)")
            return
        if isinstance(store, Path):
            object.__setattr__(self, "feature_store", store := str(store))
        if not isinstance(store, str) or not store.strip():
            raise _fail("feature_store", store, "give a folder path, or None to prepare in memory")
        if "://" in store:  # an fsspec URL: its filesystem must be known and installed
            import fsspec

            try:
                fsspec.get_filesystem_class(store.split("://", 1)[0])
            except (ImportError, ValueError) as exc:
                raise _fail(
                    "feature_store",
                    store,
                    f"{exc}; install the fsspec filesystem for that scheme (e.g. s3fs, gcsfs) "
                    "or give a local folder",
                ) from None

    def _check_names(self) -> None:
        if self.timezone is not None:
            try:
                zoneinfo.ZoneInfo(self.timezone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
                raise _fail(
                    "timezone", self.timezone, "not an IANA timezone; use e.g. America/New_York"
                ) from None
        for name in ("timestamp_column", "symbol_column", "contract_column"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise _fail(name, value, "must be a non-empty column name")
        for name in ("observed_columns", "known_columns", "synthetic_symbols", "symbols"):
            values = getattr(self, name)
            if any(not isinstance(v, str) or not v.strip() for v in values):
                raise _fail(name, values, "every entry must be a non-empty string")
            if len(set(values)) != len(values):
                raise _fail(name, values, "entries must be distinct")
            if name in ("observed_columns", "known_columns") and set(values) & set(
                _RESERVED_COLUMNS
            ):
                raise _fail(name, values, f"{_RESERVED_COLUMNS} cannot be model inputs")
        both = sorted(set(self.observed_columns) & set(self.known_columns))
        if both:
            raise _fail("known_columns", self.known_columns, f"{both} also in observed_columns")
        if not self.synthetic_symbols:
            raise _fail("synthetic_symbols", self.synthetic_symbols, "name at least one symbol")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: paths as strings, tuples as lists."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["path"] = None if self.path is None else str(self.path)
        out["split"] = None if self.split is None else self.split.to_dict()
        for name in _TUPLE_FIELDS:
            out[name] = list(out[name])
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataConfig:
        check_known_fields(cls, data, "data config")
        return cls(**data)
