"""`prepare_in_memory`: bars in; train/validation/test windows, schema and fitted
preprocessing out, all in memory (`feature_store.prepare_data` may read them from disk)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from foxhunt.data.config import DataConfig
from foxhunt.data.dataset import WindowDataset
from foxhunt.data.encoded import EncodedFrame, FeatureSchema
from foxhunt.data.features import FeatureSpec, parse_groups
from foxhunt.data.features.fitting import constant_inputs, drop_inputs
from foxhunt.data.fit import check_compatible, resolve_max_gap
from foxhunt.data.footprint import check_matrix_fits
from foxhunt.data.io import normalize_timestamps, timezone_name
from foxhunt.data.new_run import fit_new_run, row_splits
from foxhunt.data.planned import EncodedBars, plan_windows, summarize
from foxhunt.data.planted import builtin_market, generate_planted
from foxhunt.data.preprocess import Preprocessor
from foxhunt.data.scaling import CategoryEncoder
from foxhunt.data.sources import apply_filter, read_source, row_filter
from foxhunt.data.summary import DataSummary
from foxhunt.data.synthetic import generate_bars
from foxhunt.data.windows import SPLITS, warn_short_train


@dataclass(frozen=True)
class PreparedData:
    train: WindowDataset
    validation: WindowDataset
    test: WindowDataset
    schema: FeatureSchema
    preprocessor: Preprocessor
    summary: DataSummary
    #: the bars behind the windows for `data.rebase` (their inputs are spent: scaled in place)
    encoded: EncodedFrame | None = field(default=None, repr=False, compare=False)


def load_frame(config: DataConfig) -> pd.DataFrame:
    """The configured bars file (normalized, not yet validated), or the built-in synthetic bars
    when `config.path` is None."""
    bounds = row_filter(config.start, config.end, config.symbols, config.timezone)
    if config.path is not None:  # validated by the caller, with its row minimum and columns
        return read_source(
            config.path,
            timezone=config.timezone,
            timestamp_column=config.timestamp_column,
            symbol_column=config.symbol_column,
            bounds=bounds,
        )
    if config.synthetic_market == "planted":
        market = builtin_market(
            config.synthetic_days, config.synthetic_seed, config.synthetic_symbols
        )
        frame = generate_planted(market).frame
    else:
        frame = generate_bars(
            days=config.synthetic_days, seed=config.synthetic_seed, symbols=config.synthetic_symbols
        )
    kind = "planted-signal" if config.synthetic_market == "planted" else "synthetic"
    source = f"{kind} bars ({config.synthetic_days} days, seed {config.synthetic_seed})"
    frame["timestamp"] = normalize_timestamps(
        frame["timestamp"], timezone=config.timezone, column="timestamp", source=source
    )
    frame = apply_filter(frame, bounds)
    frame.attrs["source"] = source
    return frame


def _encode_new_run(
    frame: pd.DataFrame, config: DataConfig, spec: FeatureSpec, source: str, min_rows: int
) -> tuple[EncodedFrame, FeatureSpec, CategoryEncoder, int]:
    """A new run's validated, encoded bars, its spec with calendar and fitted feature state,
    symbol encoder and median bar spacing."""
    bars = fit_new_run(frame, config, spec, source, min_rows)
    spec = bars.spec
    check_matrix_fits(len(bars.frame), spec, source=source, store=config.feature_store)
    encoded = EncodedFrame.build(
        bars.frame, spec, timezone=bars.timezone, codes=bars.codes, contract_column=bars.contracts
    )
    train = row_splits(encoded.times_ns, config)[1] == 0
    if spec.groups and (dropped := constant_inputs(encoded.features, spec, train)):
        spec, encoded = drop_inputs(spec, encoded, dropped)
    return encoded, spec, bars.symbols, bars.spacing_ns


def _encode(
    frame: pd.DataFrame,
    config: DataConfig,
    source: str,
    preprocessor: Preprocessor | None,
) -> EncodedBars:
    """The features of `frame`: a new run's (its spec fitted on its training rows), or a
    resumed run's, exactly as its saved preprocessor computes them."""
    spec = FeatureSpec(
        config.volatility_windows,
        config.observed_columns,
        config.known_columns,
        groups=parse_groups(config.feature_groups),
    )
    min_rows = config.lookback + config.horizon
    if preprocessor is not None:
        check_compatible(preprocessor, config, spec)
        check_matrix_fits(len(frame), preprocessor.spec, source=source, store=config.feature_store)
        return EncodedBars(
            encoded=preprocessor.encode(frame, min_rows=min_rows),
            spec=preprocessor.spec,
            symbols=preprocessor.symbols,
            timezone=preprocessor.timezone,
            max_gap_ns=preprocessor.max_gap_ns,
            spacing_ns=preprocessor.bar_spacing_ns,
        )
    encoded, spec, encoder, spacing = _encode_new_run(frame, config, spec, source, min_rows)
    return EncodedBars(
        encoded=encoded,
        spec=spec,
        symbols=encoder,
        timezone=timezone_name(encoded.frame["timestamp"].dt.tz),
        max_gap_ns=resolve_max_gap(config.max_gap, spacing),
        spacing_ns=spacing,
    )


def prepare_in_memory(
    config: DataConfig, *, preprocessor: Preprocessor | None = None
) -> PreparedData:
    """Read (or synthesize) bars, split them in time, fit scalers on train, index windows,
    all in memory (`foxhunt.data.prepare_data` goes through a feature store when configured).

    With `preprocessor` (a resumed run) its scalers, symbol codes, timezone and max gap are
    reused rather than fitted, so the inputs are exactly those the saved model was trained on.
    """
    frame = load_frame(config)
    source = str(frame.attrs.get("source", config.path))
    bars = _encode(frame, config, source, preprocessor)
    del frame  # the validated copy in `bars.encoded` is the one kept
    plan = plan_windows(bars, config, source, preprocessor)
    preprocessor, encoded = plan.preprocessor, bars.encoded
    datasets = preprocessor.windows(encoded, plan.anchors, plan.baseline, consume=True)
    warmup = max(bars.spec.warmup_bars, config.baseline_window)
    warn_short_train(len(datasets["train"]), int((plan.splits == 0).sum()), warmup, source)
    counts = {name: len(datasets[name]) for name in SPLITS}
    summary = summarize(source, len(encoded.times_ns), preprocessor, plan.index, counts, plan.cuts)
    return PreparedData(
        train=datasets["train"],
        validation=datasets["validation"],
        test=datasets["test"],
        schema=preprocessor.schema,
        preprocessor=preprocessor,
        summary=summary,
        encoded=encoded,
    )
