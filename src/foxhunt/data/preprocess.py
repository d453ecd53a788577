"""The fitted preprocessing of a run: new bars in, windows the trained model understands out.

`Preprocessor` holds all fitted at training time (scalers, symbol encoder, feature spec, windows,
gap, timezone, intraday profile, base), saved as JSON by the weights: `predict`, `evaluate` and
a resume transform bars exactly as training did. Fitted in `data/fit.py`; latest windows: `latest.py`.
"""

# long: one fitted object's fields, encoding, windows and JSON, methods sharing its state

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch

from foxhunt.data.calendar import gap_clock
from foxhunt.data.dataset import WindowDataset, baseline_tensors
from foxhunt.data.encoded import EncodedFrame, FeatureSchema
from foxhunt.data.features import TARGET_NAME, FeatureSpec, series_starts
from foxhunt.data.features.instrument import static_table
from foxhunt.data.footprint import check_matrix_fits
from foxhunt.data.io import normalize_timestamps
from foxhunt.data.scaling import CategoryEncoder, StandardScaler, TargetScaler
from foxhunt.data.series import validated_series
from foxhunt.data.volatility import (
    BaselineRows,
    BaseVolatility,
    IntradayProfile,
    baseline_rows,
    minute_of_day,
)
from foxhunt.data.windows import gap_flags, index_windows
from foxhunt.errors import ConfigError, DataError
from foxhunt.migrations import PREPROCESSOR
from foxhunt.storage import atomic_write_json

#: the base every run had before `DataConfig.base`: the rolling RMS of `baseline_window` bars
ROLLING_BASE = "realized_vol"


@dataclass(frozen=True, kw_only=True)
class Preprocessor:
    """Fitted preprocessing; build it with `prepare_data`, persist it with save/load."""

    #: the format preprocessor.json is written in (earlier ones: foxhunt/migrations.py)
    VERSION: ClassVar[int] = PREPROCESSOR.current

    spec: FeatureSpec
    lookback: int
    horizon: int
    max_gap_ns: int | None  # resolved ("auto" already applied); None = gaps ignored
    bar_spacing_ns: int  # median bar spacing of the training bars
    timezone: str  # naive bars are localized to it; calendar features use it
    scaler: StandardScaler
    target_scaler: TargetScaler
    symbols: CategoryEncoder
    profile: IntradayProfile | None = None  # None: no baseline scale (a version-1 run)
    baseline_window: int = 64  # bars of the rolling base volatility
    fast_window: int = 0  # bars of the fast volatility behind TFTBatch.vol_signal; 0 = none
    contract_column: str | None = None  # DataConfig's setting ("auto", a name, None)
    roll_adjust: str | None = None  # None: contracts as segments; "ratio" / "difference"
    cross_breaks: bool = False  # gaps in trading time of each symbol's spec.calendar
    #: the volatility behind the scale (`DataConfig.base`, resolved: never "auto")
    base: str = ROLLING_BASE
    #: a fitted base's filter, bound from baseline.json by `foxhunt.runs.read_run_preprocessor`
    base_filter: BaseVolatility | None = field(default=None, compare=False, repr=False)

    @property
    def target_scale(self) -> float:
        """Multiply scaled targets and forecasts by this to get log returns."""
        return self.target_scaler.scale

    @property
    def max_gap(self) -> pd.Timedelta | None:
        return None if self.max_gap_ns is None else pd.Timedelta(self.max_gap_ns, unit="ns")

    @property
    def bar_spacing(self) -> pd.Timedelta:
        return pd.Timedelta(self.bar_spacing_ns, unit="ns")

    @property
    def schema(self) -> FeatureSchema:
        return FeatureSchema(
            static_names=self.spec.static_names,
            static_categorical_names=("symbol",),
            static_cardinalities=(self.symbols.cardinality,),
            past_names=(*self.spec.observed_names, *self.spec.known_names),
            future_names=self.spec.known_names,
            target_name=TARGET_NAME,
        )

    # --- transforming bars ------------------------------------------------------------
    def gap_times(self, encoded: EncodedFrame) -> np.ndarray:
        """[N] the times gaps are measured on (trading time when windows cross breaks)."""
        symbols = np.asarray(self.symbols.categories, dtype=object)[encoded.symbol_codes]
        return gap_clock(encoded.times_ns, self.spec.calendar, self.cross_breaks, symbols)

    def encode(self, frame: pd.DataFrame, *, min_rows: int) -> EncodedFrame:
        """Validate `frame`, move it to the training timezone and compute its features."""
        source = str(frame.attrs.get("source", "the bars frame"))
        valid, contracts = validated_series(
            frame,
            source=source,
            min_rows=min_rows,
            extra_columns=self.spec.user_columns,
            contract_column=self.contract_column,
            roll_adjust=self.roll_adjust,
        )
        times = valid["timestamp"]
        # read_normalized already parsed them into this timezone: parse and check only once
        if not (isinstance(times.dtype, pd.DatetimeTZDtype) and str(times.dt.tz) == self.timezone):
            valid["timestamp"] = normalize_timestamps(
                times, timezone=self.timezone, column="timestamp", source=source
            )
        codes = self.symbols.encode(valid["symbol"].to_numpy(), source=source)
        return EncodedFrame.build(
            valid, self.spec, timezone=self.timezone, codes=codes, contract_column=contracts
        )

    def baseline(self, encoded: EncodedFrame) -> BaselineRows | None:
        """Per-row base volatility and profile (scaled units); None without a profile."""
        if self.profile is None:
            return None
        if self.base != ROLLING_BASE and (
            self.base_filter is None or self.base_filter.name != self.base
        ):
            raise DataError(
                f"this run's base volatility is {self.base!r}, fitted on its training span and "
                "kept in its baseline.json: load the run folder (foxhunt.serving.load_run), "
                "which reads it"
            )
        return baseline_rows(
            encoded.features.returns,
            minute_of_day(encoded.times, self.timezone),
            series_starts(encoded.series_codes),
            profile=self.profile,
            window=self.baseline_window,
            target_scale=self.target_scale,
            gaps=gap_flags(encoded.series_codes, self.gap_times(encoded), self.max_gap_ns),
            fast_window=self.fast_window,
            codes=encoded.symbol_codes,
            base=None if self.base == ROLLING_BASE else self.base_filter,
        )

    def static_values(self) -> torch.Tensor | None:
        """[S, K] the static inputs of each symbol code (None: the spec has none)."""
        if not self.spec.static_names:
            return None
        return torch.from_numpy(static_table(self.spec.instrument, self.symbols.categories))

    @staticmethod
    def ready_anchors(
        anchors: dict[str, np.ndarray], baseline: BaselineRows | None
    ) -> dict[str, np.ndarray]:
        """`anchors` less those still in the base volatility's warm-up (no NaN scale);
        `baseline` is `self.baseline(encoded)` of the same frame."""
        if baseline is None:
            return anchors
        return {name: rows[baseline.ready[rows]] for name, rows in anchors.items()}

    def windows(
        self,
        encoded: EncodedFrame,
        anchors: dict[str, np.ndarray],
        baseline: BaselineRows | None,
        *,
        consume: bool = False,
    ) -> dict[str, WindowDataset]:
        """One dataset per entry of `anchors` (from `ready_anchors`), all sharing one set of
        storage tensors; `baseline` is `self.baseline(encoded)`, computed once by the caller.
        With `consume` the library's float32 inputs are scaled in place (`encoded`'s inputs
        are spent): no second [N, P] matrix."""
        inputs, rows_codes = encoded.features.inputs, encoded.symbol_codes
        if consume and inputs.dtype == np.float32:
            scaled = self.scaler.scale_in_place(inputs, rows_codes)
        else:
            scaled = self.scaler.transform(inputs, codes=rows_codes)
        values = torch.from_numpy(scaled)  # each symbol by its own statistics
        targets = torch.from_numpy(self.target_scaler.transform(encoded.features.returns))
        ranges = torch.from_numpy(encoded.log_ranges())
        codes = torch.from_numpy(encoded.symbol_codes.astype(np.int64))
        volatility = profile = signal = None
        if baseline is not None:
            if not all(baseline.ready[rows].all() for rows in anchors.values()):
                raise DataError("an anchor lies in the base volatility's warm-up")
            volatility, profile, signal = baseline_tensors(baseline)
        static = self.static_values()
        return {
            name: WindowDataset(
                past_values=values,
                num_observed=encoded.features.num_observed,
                target_values=targets,
                symbol_codes=codes,
                anchors=torch.from_numpy(rows.astype(np.int64)),
                lookback=self.lookback,
                horizon=self.horizon,
                timestamps=encoded.times,
                symbols=self.symbols.categories,
                base_volatility=volatility,
                profile=profile,
                vol_signal=signal,
                static_values=static,
                range_values=ranges,
            )
            for name, rows in anchors.items()
        }

    def dataset(self, frame: pd.DataFrame) -> WindowDataset:
        """Every valid window of new bars (for `evaluate`), with targets, scaled as in training."""
        source = str(frame.attrs.get("source", "the bars frame"))
        check_matrix_fits(len(frame), self.spec, source=source, store=None, reading="evaluate")
        encoded = self.encode(frame, min_rows=self.lookback + self.horizon)
        baseline = self.baseline(encoded)  # once: the rolling volatilities are the cost here
        anchors = {"all": self.every_anchor(encoded, baseline)}
        return self.windows(encoded, anchors, baseline, consume=True)["all"]

    def every_anchor(self, encoded: EncodedFrame, baseline: BaselineRows | None) -> np.ndarray:
        """The anchor of every valid window of `encoded`'s bars, whatever its split, past the
        base volatility's warm-up (`baseline`: `self.baseline(encoded)`); a DataError naming
        the bars when there is none."""
        index = index_windows(
            encoded.series_codes,
            np.zeros(len(encoded.finite), dtype=np.int8),
            self.gap_times(encoded),
            encoded.finite,
            lookback=self.lookback,
            horizon=self.horizon,
            max_gap_ns=self.max_gap_ns,
        )
        anchors = self.ready_anchors({"all": index.anchors["train"]}, baseline)["all"]
        if len(anchors) == 0:
            raise DataError(
                f"{encoded.frame.attrs.get('source')}: no complete window of "
                f"{self.lookback} + {self.horizon} bars without a gap over {self.max_gap} after "
                "the rolling warm-up; use a longer file"
            )
        return anchors

    # --- persistence ------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "version": self.VERSION,
            "spec": self.spec.to_dict(),
            "lookback": self.lookback,
            "horizon": self.horizon,
            "max_gap_ns": self.max_gap_ns,
            "bar_spacing_ns": self.bar_spacing_ns,
            "timezone": self.timezone,
            "scaler": self.scaler.state_dict(),
            "target_scaler": self.target_scaler.state_dict(),
            "symbols": self.symbols.state_dict(),
            "profile": None if self.profile is None else self.profile.state_dict(),
            "baseline_window": self.baseline_window,
            "fast_window": self.fast_window,
            "contract_column": self.contract_column,
            "roll_adjust": self.roll_adjust,
            "cross_breaks": self.cross_breaks,
            "base": self.base,
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> Preprocessor:
        """A saved state of any version (migrated to today's first: foxhunt/migrations.py)."""
        state = PREPROCESSOR.migrated(state)
        profile = state["profile"]
        return cls(
            spec=FeatureSpec.from_dict(state["spec"]),
            lookback=int(state["lookback"]),
            horizon=int(state["horizon"]),
            max_gap_ns=None if state["max_gap_ns"] is None else int(state["max_gap_ns"]),
            bar_spacing_ns=int(state["bar_spacing_ns"]),
            timezone=str(state["timezone"]),
            scaler=StandardScaler.from_state_dict(state["scaler"]),
            target_scaler=TargetScaler.from_state_dict(state["target_scaler"]),
            symbols=CategoryEncoder.from_state_dict(state["symbols"]),
            profile=None if profile is None else IntradayProfile.from_state_dict(profile),
            baseline_window=int(state["baseline_window"]),
            fast_window=int(state["fast_window"]),
            contract_column=state["contract_column"],
            roll_adjust=state["roll_adjust"],
            cross_breaks=bool(state["cross_breaks"]),
            base=_base_name(state["base"]),
        )

    def save(self, path: str | Path) -> None:
        """Write the state as JSON, atomically."""
        atomic_write_json(Path(path), self.state_dict())

    @classmethod
    def load(cls, path: str | Path) -> Preprocessor:
        path = Path(path)
        if not path.is_file():
            raise DataError(
                f"{path}: preprocessor file not found; pass the run folder of a trained model"
            )
        try:
            return cls.from_state_dict(json.loads(path.read_text()))
        except ConfigError as exc:  # a version no foxhunt wrote, or a newer one
            raise DataError(f"{path}: {exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
            raise DataError(
                f"{path}: not a valid foxhunt preprocessor ({type(exc).__name__}: {exc}); retrain or restore the file"
            ) from None


def _base_name(value: object) -> str:
    """A saved base: a name (what it names is checked where its fitted state is bound)."""
    if not isinstance(value, str) or not value or value == "auto":
        raise KeyError("base")  # read_preprocessor: "field 'base' ... has the wrong type"
    return value
