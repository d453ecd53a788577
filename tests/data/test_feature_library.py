"""The feature library (data/features/): every input causal, per series, fitted on train only,
chosen and checked by config."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from foxhunt.data import DataConfig, Preprocessor, generate_bars, prepare_data, validate_bars
from foxhunt.data.features import GROUPS, FeatureSpec, compute_features, parse_groups
from foxhunt.data.features.fitting import fit_feature_state
from foxhunt.errors import ConfigError, DataError
from foxhunt.migrations import SPEC_BEFORE_GROUPS

TZ = "America/New_York"
#: every group with short windows, so three sessions of bars warm them all up; but "expiry",
#: which reads a contract column (tests/data/test_feature_expiry.py)
SMALL = tuple(f"{g}:3/6" if GROUPS[g].windows else g for g in GROUPS if not GROUPS[g].contract)


def valid_bars(frame: pd.DataFrame, contracts: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    column = "contract" if contracts else None
    valid = validate_bars(frame, source="test", min_rows=1, contract_column=column)
    keys = [valid["symbol"]] + ([valid["contract"]] if contracts else [])
    series = pd.MultiIndex.from_arrays(keys).factorize()[0] if contracts else None
    if series is None:
        series = pd.factorize(valid["symbol"], sort=True)[0]
    return valid, np.asarray(series, dtype=np.int64)


def fitted_spec(frame: pd.DataFrame, groups: tuple[str, ...] = SMALL) -> FeatureSpec:
    valid, series = valid_bars(frame)
    spec = FeatureSpec(volatility_windows=(3,), groups=parse_groups(groups))
    train = np.ones(len(valid), dtype=bool)
    return fit_feature_state(
        valid, spec, series_codes=series, train=train, timezone=TZ, spacing_ns=300 * 10**9
    )


def table(frame: pd.DataFrame, spec: FeatureSpec, contracts: bool = False) -> pd.DataFrame:
    """Every input of `frame`, indexed by (symbol, timestamp)."""
    valid, series = valid_bars(frame, contracts)
    f = compute_features(valid, spec, timezone=TZ, symbol_codes=series)
    names = [*spec.observed_names, *spec.known_names]
    index = pd.MultiIndex.from_arrays([valid["symbol"], valid["timestamp"]])
    return pd.DataFrame(f.inputs, columns=names, index=index)


@pytest.fixture(scope="module")
def two_symbols() -> pd.DataFrame:
    return generate_bars(days=3, seed=3, symbols=("ES", "NQ"))


@pytest.fixture(scope="module")
def spec(two_symbols: pd.DataFrame) -> FeatureSpec:
    return fitted_spec(two_symbols)


def test_small_spec_covers_every_group(spec: FeatureSpec) -> None:
    groups = {c.group for c in spec.columns()}
    assert set(GROUPS) - {"expiry"} <= groups
    assert len(spec.observed_names) > 60


def plant(frame: pd.DataFrame, row: int, how: str) -> pd.DataFrame:
    out = frame.copy()
    if how == "price":  # every price of bar t moves up 1% (still a valid bar)
        out.loc[row, ["open", "high", "low", "close"]] *= 1.01
    elif how == "volume":
        out.loc[row, "volume"] = out.loc[row, "volume"] * 7 + 100
    elif how == "remove":
        out = out.drop(index=row)
    elif how == "truncate":  # bar t and every later bar of its symbol gone
        mine = out["symbol"] == out.loc[row, "symbol"]
        out = out[~(mine & (out["timestamp"] >= out.loc[row, "timestamp"]))]
    return out.reset_index(drop=True)


@pytest.mark.parametrize("how", ["price", "volume", "remove", "truncate"])
def test_no_input_before_a_changed_bar_moves(
    two_symbols: pd.DataFrame, spec: FeatureSpec, how: str
) -> None:
    before = table(two_symbols, spec)
    es = np.flatnonzero(two_symbols["symbol"] == "ES")
    for row in (es[5], es[300], es[400], es[-3]):
        t = two_symbols.loc[row, "timestamp"]
        after = table(plant(two_symbols, row, how), spec)
        earlier = before.index.get_level_values(1) < t  # both symbols: cross inputs too
        pd.testing.assert_frame_equal(after.loc[before.index[earlier]], before[earlier])
        if how == "price":  # the planted change does reach bar t itself
            assert not after.loc[("ES", t)].equals(before.loc[("ES", t)])


def test_inputs_never_cross_a_symbol(two_symbols: pd.DataFrame, spec: FeatureSpec) -> None:
    alone_spec = replace(spec, groups=tuple(g for g in spec.groups if not GROUPS[g[0]].cross))
    both = table(two_symbols, alone_spec)
    nq = two_symbols[two_symbols["symbol"] == "NQ"].reset_index(drop=True)
    pd.testing.assert_frame_equal(both.loc[["NQ"]], table(nq, alone_spec))


def test_inputs_never_cross_a_contract(spec: FeatureSpec) -> None:
    """Two contracts of one symbol: the second's inputs are those it has alone."""
    one = generate_bars(days=6, seed=4, symbols=("ES",))
    one["contract"] = np.where(np.arange(len(one)) < len(one) // 2, "ESH5", "ESM5")
    alone_spec = replace(spec, groups=tuple(g for g in spec.groups if not GROUPS[g[0]].cross))
    both = table(one, alone_spec, contracts=True)
    second = one[one["contract"] == "ESM5"].reset_index(drop=True)
    expected = table(second, alone_spec, contracts=True)
    got = both.iloc[len(one) // 2 :]
    pd.testing.assert_frame_equal(got, expected)
    assert got.iloc[:3].isna().any(axis=1).all()  # its own warm-up again


def test_warmups_listed_are_the_leading_nans(spec: FeatureSpec, two_symbols: pd.DataFrame) -> None:
    es = table(two_symbols, spec).loc["ES"]
    for column in spec.columns():
        if column.name in spec.static_names:  # one value per symbol, not per bar
            continue
        values = es[column.name].to_numpy()
        finite = np.isfinite(values)
        assert finite.any(), column.name
        lead = int(np.argmax(finite))
        assert finite[lead:].all(), f"{column.name}: NaN after its warm-up"
        if column.warmup.endswith(" bars"):
            assert f"{lead} bars" == column.warmup, column.name


def write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_parquet(path)
    return path


def test_typical_volume_is_fitted_on_train_rows_only(tmp_path: Path) -> None:
    frame = generate_bars(days=6, seed=5)
    config = dict(lookback=8, horizon=2, feature_groups=("activity:3",), calendar="none")
    base = prepare_data(DataConfig(path=write(frame, tmp_path / "a.parquet"), **config))
    test_start = base.summary.test_start
    in_test = frame["timestamp"] >= test_start
    planted = frame.assign(volume=np.where(in_test, frame["volume"] * 50, frame["volume"]))
    moved = prepare_data(DataConfig(path=write(planted, tmp_path / "b.parquet"), **config))
    profile = base.preprocessor.spec.volume_profile
    assert profile and moved.preprocessor.spec.volume_profile == profile
    in_train = frame["timestamp"] < base.summary.validation_start
    trained = frame.assign(volume=np.where(in_train, frame["volume"] * 50, frame["volume"]))
    shifted = prepare_data(DataConfig(path=write(trained, tmp_path / "c.parquet"), **config))
    assert shifted.preprocessor.spec.volume_profile != profile  # the test can fail


def test_a_run_saves_and_reloads_its_spec(tmp_path: Path) -> None:
    config = DataConfig(
        synthetic_market="garch",
        synthetic_days=6,
        lookback=8,
        horizon=2,
        feature_groups=("returns:3/6", "trend:4"),
    )
    data = prepare_data(config)
    path = tmp_path / "preprocessor.json"
    data.preprocessor.save(path)
    loaded = Preprocessor.load(path)
    assert loaded.spec == data.preprocessor.spec
    assert "ret_6" in loaded.schema.past_names and "zscore_4" in loaded.schema.past_names
    again = loaded.dataset(generate_bars(days=6, seed=0))
    assert again.past_values.shape[1] == data.train.past_values.shape[1]


def test_a_spec_saved_before_the_library_reads_as_the_default_spec() -> None:
    """Its preprocessor.json's migration (foxhunt/migrations.py) fills the library's fields
    with what the default spec writes."""
    saved = FeatureSpec().to_dict()
    older = {k: saved[k] for k in ("volatility_windows", "observed_columns", "known_columns")}
    assert {**older, "calendar": None, **SPEC_BEFORE_GROUPS} == saved
    assert FeatureSpec.from_dict(saved) == FeatureSpec()


@pytest.mark.parametrize(
    ("groups", "words"),
    [
        (("nope",), "unknown feature group 'nope'"),
        (("realized:1",), "windows of 'realized'"),
        (("returns:3/x",), "must be integers"),
        (("cycles:3",), "takes no windows"),
        (("trend", "trend:4"), "name each group once"),
    ],
)
def test_bad_groups_name_the_field(groups: tuple[str, ...], words: str) -> None:
    with pytest.raises(ConfigError, match=r"DataConfig\.feature_groups") as error:
        DataConfig(feature_groups=groups)
    assert words in str(error.value)


def test_bad_data_for_the_groups_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'cross' needs several symbols"):
        prepare_data(
            DataConfig(
                synthetic_market="garch",
                synthetic_days=3,
                lookback=8,
                horizon=2,
                feature_groups=("cross",),
            )
        )
    with pytest.raises(ConfigError, match="longer than the longest series"):
        prepare_data(
            DataConfig(
                synthetic_market="garch",
                synthetic_days=2,
                lookback=8,
                horizon=2,
                feature_groups=("trend:600",),
            )
        )
    with pytest.raises(DataError, match="feature ret_700: no finite value on the training span"):
        prepare_data(
            DataConfig(
                synthetic_market="garch",
                synthetic_days=3,
                lookback=8,
                horizon=2,
                feature_groups=("returns:700",),
            )
        )


def test_a_constant_input_is_dropped_with_a_warning(
    data_log: pytest.LogCaptureFixture,
) -> None:
    """The synthetic bars reopen at the last close: their session gap is always 0."""
    data = prepare_data(
        DataConfig(
            synthetic_market="garch",
            synthetic_days=4,
            lookback=8,
            horizon=2,
            feature_groups=("location:3",),
        )
    )
    assert "session_gap" in data.preprocessor.spec.dropped
    assert "session_gap" not in data.schema.past_names and "vwap_dist" in data.schema.past_names
    warned = [r.getMessage() for r in data_log.records if r.levelno == logging.WARNING]
    assert "feature session_gap is constant on the training span: dropped" in warned
    again = data.preprocessor.dataset(generate_bars(days=4, seed=0))  # computed without it
    np.testing.assert_array_equal(again.past_values.numpy(), data.train.past_values.numpy())


def test_the_tft_225_preset_feeds_210_observed_and_10_known_inputs() -> None:
    from foxhunt.cli.presets import preset

    groups = preset("tft-225")["data"]["feature_groups"]
    spec = FeatureSpec(groups=parse_groups(groups), calendar="CME Globex Equity")
    assert len(spec.observed_names) >= 210 and len(set(spec.observed_names)) == len(
        spec.observed_names
    )
    assert len(spec.known_names) == 10
    assert len(spec.static_names) == 4  # and the symbol: 5 static inputs
    assert DataConfig(feature_groups=tuple(groups)).feature_groups == tuple(groups)


def test_a_stale_symbol_is_left_out_of_the_cross_inputs() -> None:
    """YM stops for two hours: once its last bar is older than the session gap (3 bars of 5
    minutes), ES's cross inputs are NQ's alone, and with NQ gone too they are 0."""
    three = generate_bars(days=3, seed=5, symbols=("ES", "NQ", "YM"))
    times = three["timestamp"]
    start = times.iloc[len(three) // 2]
    hole = (times > start) & (times <= start + pd.Timedelta(hours=2))
    holed = three[~(hole & (three["symbol"] == "YM"))].reset_index(drop=True)
    spec = fitted_spec(holed, ("cross:3/6",))
    assert spec.session_gap_ns == 900 * 10**9
    es = table(holed, spec).loc["ES"]
    pair = table(holed[holed["symbol"] != "YM"].reset_index(drop=True), spec).loc["ES"]
    stale = (es.index > start + pd.Timedelta(minutes=15)) & (
        es.index <= start + pd.Timedelta(hours=2)
    )
    fresh = ~stale
    assert stale.sum() == 21  # 2 hours of 5-minute bars, less the 15 minutes YM still counts
    crossed = [c for c in es.columns if c.startswith(("cross_ret", "cross_vol", "rel_str"))]
    pd.testing.assert_frame_equal(es.loc[stale, crossed], pair.loc[stale, crossed])
    assert not np.allclose(es.loc[fresh, crossed].dropna(), pair.loc[fresh, crossed].dropna())
    assert (es.loc[stale, "cross_fresh"] == 0.5).all() and (es.loc[fresh, "cross_fresh"] == 1).all()
    # with NQ gone as well, no other symbol is fresh: the means are 0, rel_strength own return
    gone = (holed["timestamp"] > start) & (holed["timestamp"] <= start + pd.Timedelta(hours=2))
    alone = holed[~(gone & (holed["symbol"] == "NQ"))].reset_index(drop=True)
    es_alone = table(alone, spec).loc["ES"]
    assert (es_alone.loc[stale, ["cross_ret_3", "cross_vol_6", "cross_fresh"]] == 0).all().all()
    own = table(alone, fitted_spec(alone, ("returns:3/6",))).loc["ES"]
    np.testing.assert_array_equal(es_alone.loc[stale, "rel_strength_3"], own.loc[stale, "ret_3"])
