import logging
import pickle
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from foxhunt.batch import TFTBatch
from foxhunt.data import (
    DataConfig,
    PreparedData,
    Preprocessor,
    WindowDataset,
    generate_bars,
    latest_windows,
    make_loader,
    prepare_data,
)
from foxhunt.data.future import forecast_times
from foxhunt.errors import ConfigError, DataError

SMALL = {"lookback": 16, "horizon": 4, "volatility_windows": (6, 12)}


@pytest.fixture(scope="module")
def synthetic() -> PreparedData:
    return prepare_data(
        DataConfig(
            synthetic_market="garch", synthetic_days=12, synthetic_symbols=("ES", "NQ"), **SMALL
        )
    )


def window_rows(ds: WindowDataset) -> np.ndarray:
    """[W, L+H] rows of every window (for checks; the dataset itself never builds this)."""
    return ds.anchors.numpy()[:, None] + np.arange(-ds.lookback + 1, ds.horizon + 1)


def window_times(ds: WindowDataset) -> np.ndarray:
    return ds.timestamps.asi8[window_rows(ds)]


def splits_of(data: PreparedData) -> dict[str, WindowDataset]:
    return {"train": data.train, "validation": data.validation, "test": data.test}


def test_schema_and_batch_shapes(synthetic: PreparedData) -> None:
    schema = synthetic.schema
    assert schema.static_names == () and schema.static_categorical_names == ("symbol",)
    assert schema.static_cardinalities == (2,) and schema.target_name == "log_return"
    assert schema.past_names[: len(schema.past_names) - len(schema.future_names)][0] == "log_return"
    assert schema.past_names[-len(schema.future_names) :] == schema.future_names
    batch = synthetic.train.__getitems__([0, 3, 7])
    assert isinstance(batch, TFTBatch)
    assert batch.static.shape == (3, 0) and batch.static_categorical.shape == (3, 1)
    assert batch.past.shape == (3, 16, len(schema.past_names)) and batch.past.dtype == torch.float32
    assert batch.future.shape == (3, 4, len(schema.future_names))
    assert batch.target is not None and batch.target.shape == (3, 4)
    assert batch.anchor is not None and batch.anchor.dtype == torch.int64
    single = synthetic.train[3]
    assert single.past.shape[0] == 1 and torch.equal(single.past[0], batch.past[1])
    assert all(torch.isfinite(t).all() for t in (batch.past, batch.future, batch.target))


def test_windows_match_their_rows(synthetic: PreparedData) -> None:
    ds = synthetic.validation
    batch = ds.__getitems__([0, len(ds) - 1])
    for b, anchor in enumerate(batch.anchor.tolist()):
        assert torch.equal(batch.past[b], ds.past_values[anchor - 15 : anchor + 1])
        assert torch.equal(batch.future[b], ds.future_values[anchor + 1 : anchor + 5])
        assert torch.equal(batch.target[b], ds.target_values[anchor + 1 : anchor + 5])
        assert ds.timestamps_for(anchor).equals(ds.timestamps[anchor + 1 : anchor + 5])


def test_every_window_lies_in_one_split(synthetic: PreparedData) -> None:
    summary = synthetic.summary
    cuts = [summary.validation_start.value, summary.test_start.value]
    bounds = {"train": (None, cuts[0]), "validation": (cuts[0], cuts[1]), "test": (cuts[1], None)}
    for name, ds in splits_of(synthetic).items():
        assert len(ds) > 0
        times = window_times(ds)
        low, high = bounds[name]
        assert low is None or (times >= low).all(), name
        assert high is None or (times < high).all(), name


def test_last_train_target_ends_before_first_validation_row(synthetic: PreparedData) -> None:
    train = synthetic.train
    last_target_rows = train.anchors + train.horizon
    last_time = train.timestamps[int(last_target_rows.max())]
    assert last_time < synthetic.summary.validation_start


def test_multiple_symbols_never_mix(synthetic: PreparedData) -> None:
    for ds in splits_of(synthetic).values():
        codes = ds.symbol_codes.numpy()[window_rows(ds)]
        assert (codes == codes[:, :1]).all()
        batch = ds.__getitems__(list(range(len(ds))))
        assert torch.equal(batch.static_categorical[:, 0], ds.symbol_codes[ds.anchors])
    train = synthetic.train
    assert {train.symbols[c] for c in train.symbol_codes[train.anchors].tolist()} == {"ES", "NQ"}


def test_scalers_use_train_rows_only(tmp_path: Path) -> None:
    bars = generate_bars(days=10, seed=4)
    bars.to_parquet(tmp_path / "a.parquet")
    config = DataConfig(path=tmp_path / "a.parquet", **SMALL)
    first = prepare_data(config)
    later = bars["timestamp"] >= first.summary.validation_start
    changed = bars.copy()
    changed.loc[later, ["open", "high", "low", "close"]] *= 1.5
    changed.loc[later, "volume"] *= 10
    changed.to_parquet(tmp_path / "b.parquet")
    second = prepare_data(DataConfig(path=tmp_path / "b.parquet", **SMALL))
    assert first.preprocessor.scaler == second.preprocessor.scaler
    assert first.preprocessor.target_scale == second.preprocessor.target_scale
    # ... and they are exactly the statistics of the finite training rows.
    train_rows = np.flatnonzero(~later.to_numpy())[12:]  # after the 12-bar volatility warm-up
    p = first.preprocessor
    raw = (
        first.train.past_values.numpy()[train_rows].astype(np.float64) * p.scaler.std
        + p.scaler.mean
    )
    np.testing.assert_allclose(raw.mean(axis=0), p.scaler.mean, atol=1e-5 * p.scaler.std.max())
    # a column constant over training (the calendar's early_close flag here) keeps std 1
    expected_std = np.where(raw.std(axis=0) > 1e-12, raw.std(axis=0), 1.0)
    np.testing.assert_allclose(expected_std, p.scaler.std, rtol=1e-4)
    returns = np.diff(np.log(bars["close"].to_numpy()))[train_rows - 1]  # return of each row
    np.testing.assert_allclose(p.target_scale, np.sqrt(np.mean(returns**2)), rtol=1e-12)


def test_storage_is_shared_not_copied_per_window(synthetic: PreparedData) -> None:
    pointers = {ds.past_values.untyped_storage().data_ptr() for ds in splits_of(synthetic).values()}
    assert len(pointers) == 1
    ds = synthetic.train
    rows, features = synthetic.summary.rows, len(synthetic.schema.past_names)
    assert ds.past_values.shape == (rows, features)
    assert ds.past_values.untyped_storage().nbytes() == rows * features * 4
    assert ds.future_values.untyped_storage().data_ptr() == next(iter(pointers))
    before = ds.past_values.untyped_storage().data_ptr()
    for batch in make_loader(ds, batch_size=256, shuffle=True, seed=0):
        assert batch.past.untyped_storage().data_ptr() != before  # a fresh batch, not a view
    assert ds.past_values.untyped_storage().data_ptr() == before
    tensors = [v for v in vars(ds).values() if isinstance(v, torch.Tensor)]
    assert sum(t.numel() for t in tensors) < 2 * rows * features  # nothing of size W x L


def test_gaps_on_real_bars(es_parquet: Path) -> None:
    gapped = prepare_data(DataConfig(path=es_parquet, max_gap="10min"))
    straddling = 0
    for ds in splits_of(gapped).values():
        times = window_times(ds)
        assert (np.diff(times, axis=1) <= pd.Timedelta("10min").value).all()
        local = pd.DatetimeIndex(times.ravel()).tz_localize("UTC").tz_convert("America/New_York")
        weekday = local.day_of_week.to_numpy().reshape(times.shape)
        assert not ((weekday == 4).any(axis=1) & (weekday == 6).any(axis=1)).any()
    for ds in splits_of(prepare_data(DataConfig(path=es_parquet, max_gap=None))).values():
        straddling += int(
            (np.diff(window_times(ds), axis=1) > pd.Timedelta("1h").value).any(1).sum()
        )
    assert straddling > 0, "without max_gap some windows straddle the break or a weekend"
    assert gapped.summary.gaps == 41 + 7 + 1 + 1 + 1 + 1  # 65-min breaks, weekends, holidays


def test_dst_week_on_real_bars(es_parquet: Path) -> None:
    data = prepare_data(DataConfig(path=es_parquet, max_gap="10min", **SMALL))
    ds = data.train
    stamps = ds.timestamps
    after = (stamps >= pd.Timestamp("2026-03-08 18:00", tz="America/New_York")) & (
        stamps < pd.Timestamp("2026-03-13", tz="America/New_York")
    )
    anchors = ds.anchors.numpy()
    assert np.isin(anchors, np.flatnonzero(after)).sum() > 500, "windows in the DST week"
    first = stamps.get_loc(pd.Timestamp("2026-03-08 18:05", tz="America/New_York"))
    assert not ((anchors - 15 <= first - 1) & (anchors + 4 >= first)).any(), "none across DST"
    before = stamps.get_loc(pd.Timestamp("2026-03-05 18:05", tz="America/New_York"))
    minute = data.schema.past_names.index("minute_sin")
    minute_cols = slice(minute, minute + 2)
    torch.testing.assert_close(
        ds.past_values[first, minute_cols], ds.past_values[before, minute_cols]
    )


def test_save_load_round_trip_gives_identical_batches(
    synthetic: PreparedData, tmp_path: Path
) -> None:
    synthetic.preprocessor.save(tmp_path / "preprocessor.json")
    loaded = Preprocessor.load(tmp_path / "preprocessor.json")
    assert loaded == synthetic.preprocessor
    frame = generate_bars(days=3, seed=9, symbols=("NQ", "ES"))
    a, b = synthetic.preprocessor.dataset(frame), loaded.dataset(frame)
    batch_a, batch_b = a.__getitems__(list(range(len(a)))), b.__getitems__(list(range(len(b))))
    for name in ("static", "past", "future", "target", "static_categorical", "anchor"):
        assert torch.equal(getattr(batch_a, name), getattr(batch_b, name)), name
    latest_a, latest_b = (
        latest_windows(synthetic.preprocessor, frame).batch,
        latest_windows(loaded, frame).batch,
    )
    assert torch.equal(latest_a.past, latest_b.past) and torch.equal(
        latest_a.future, latest_b.future
    )


def test_preprocessor_dataset_matches_training_windows(synthetic: PreparedData) -> None:
    frame = generate_bars(days=12, seed=0, symbols=("ES", "NQ"))  # the bars of `synthetic`
    full = synthetic.preprocessor.dataset(frame)
    torch.testing.assert_close(
        full.past_values, synthetic.train.past_values, rtol=0, atol=0, equal_nan=True
    )
    split_anchors = torch.cat([ds.anchors for ds in splits_of(synthetic).values()])
    assert set(split_anchors.tolist()) <= set(full.anchors.tolist())


def test_latest_batch_extrapolates_future_times(synthetic: PreparedData) -> None:
    frame = generate_bars(days=2, seed=5, symbols=("NQ", "ES"))
    latest = latest_windows(synthetic.preprocessor, frame)
    batch = latest.batch
    assert batch.target is None and batch.past.shape == (2, 16, len(synthetic.schema.past_names))
    assert latest.symbols == ("ES", "NQ") and batch.static_categorical[:, 0].tolist() == [0, 1]
    last = latest.last_timestamps[0]
    assert last == frame["timestamp"].max()
    expected = pd.date_range(last + pd.Timedelta("5min"), periods=4, freq="5min")
    assert latest.timestamps_for(0).equals(expected)


def test_unknown_symbol_at_predict_time(synthetic: PreparedData) -> None:
    with pytest.raises(
        DataError, match=r"symbol 'CL' was not in the training data \(known: \['ES', 'NQ'\]\)"
    ):
        latest_windows(synthetic.preprocessor, generate_bars(days=2, seed=0, symbols=("CL",)))


def test_bad_preprocessor_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"missing\.json: preprocessor file not found"):
        Preprocessor.load(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(DataError, match=r"broken\.json: not a valid foxhunt preprocessor"):
        Preprocessor.load(tmp_path / "broken.json")


def test_loader_is_seeded_and_covers_every_window(synthetic: PreparedData) -> None:
    ds = synthetic.validation

    def order(seed: int) -> list[int]:
        return [
            a
            for b in make_loader(ds, batch_size=64, shuffle=True, seed=seed)
            for a in b.anchor.tolist()
        ]

    assert order(3) == order(3) != order(4)
    assert sorted(order(3)) == sorted(ds.anchors.tolist())
    sequential = list(make_loader(ds, batch_size=100, shuffle=False, seed=0, drop_last=True))
    assert all(b.batch_size == 100 for b in sequential) and len(sequential) == len(ds) // 100
    pickle.loads(pickle.dumps(make_loader(ds, batch_size=8, shuffle=False, seed=0).collate_fn))


def test_user_columns_flow_through(tmp_path: Path) -> None:
    bars = generate_bars(days=6, seed=0).assign(spread=0.25, holiday=0.0)
    bars.loc[::7, "spread"] = 0.5
    bars.to_parquet(tmp_path / "x.parquet")
    config = DataConfig(
        path=tmp_path / "x.parquet",
        observed_columns=("spread",),
        known_columns=("holiday",),
        **SMALL,
    )
    data = prepare_data(config)
    assert "spread" in data.schema.past_names and data.schema.future_names[-1] == "holiday"
    assert data.train[0].future.shape[-1] == 8  # 4 clock + 3 session (ES: CME calendar) + 1
    missing = DataConfig(path=tmp_path / "x.parquet", observed_columns=("basis",), **SMALL)
    with pytest.raises(DataError, match=r"x\.parquet: missing column\(s\) \['basis'\]"):
        prepare_data(missing)


def test_too_long_windows_are_a_clear_error() -> None:
    with pytest.raises(DataError, match=r"the train split has no complete window of lookback 300"):
        prepare_data(DataConfig(synthetic_market="garch", synthetic_days=5, lookback=300))


def test_a_train_split_the_warm_up_eats_is_warned_about(
    data_log: pytest.LogCaptureFixture,
) -> None:
    """Issue 42: the feature warm-up left 2408 train windows of 10 days of 1-minute bars, in
    silence. Under half of the train bars as windows: one warning with both counts."""

    def warned(groups: tuple[str, ...]) -> list[str]:
        data_log.clear()
        data = prepare_data(DataConfig(synthetic_days=8, feature_groups=groups, lookback=16))
        bars = int((data.encoded.times_ns < data.summary.validation_start.value).sum())
        found = {
            r.getMessage() for r in data_log.records if "the train split keeps" in r.getMessage()
        }
        assert not found or f"keeps {len(data.train)} windows of its {bars} bars" in min(found)
        return sorted(found)

    assert warned(("trend:1000",))  # a 1000-bar warm-up of about 1550 train bars
    assert not warned(("trend:48",))


@pytest.mark.alone  # a wall-clock bound: no busy neighbour on the other core
def test_summary_is_logged(data_log: pytest.LogCaptureFixture) -> None:
    # the GARCH bars of 60 sessions (the built-in ones before the planted market), no groups;
    # how long it takes is benchmarks/data_prep.py's to say, not a test's
    config = DataConfig(synthetic_market="garch", synthetic_days=60, feature_groups=())
    data = prepare_data(config)
    lines = [r.getMessage() for r in data_log.records if r.levelno == logging.INFO]
    assert any("16560 rows, 1 symbols, bar spacing 0 days 00:05:00" in line for line in lines)
    assert data.summary.windows["train"] == len(data.train) > 0
    assert data.summary.dropped_for_gaps > 0 and data.preprocessor.max_gap == pd.Timedelta("7.5min")


def test_workers_yield_the_same_batches(synthetic: PreparedData) -> None:
    def anchors(workers: int) -> list[int]:
        loader = make_loader(
            synthetic.test, batch_size=32, shuffle=True, seed=1, num_workers=workers
        )
        return [a for b in loader for a in b.anchor.tolist()]

    assert anchors(1) == anchors(0)


@pytest.mark.slow
@pytest.mark.alone  # wall-clock bounds: no busy neighbour on the other core
def test_a_year_of_minute_bars(tmp_path: Path) -> None:
    generate_bars(days=365, seed=0, bar_minutes=1).to_parquet(tmp_path / "year.parquet")
    start = time.perf_counter()
    data = prepare_data(DataConfig(path=tmp_path / "year.parquet"))
    assert time.perf_counter() - start < 15.0
    rows, features = data.summary.rows, len(data.schema.past_names)
    assert rows == 365 * 1380 and len(data.train) > 300_000
    assert data.train.past_values.untyped_storage().nbytes() == rows * features * 4
    start = time.perf_counter()
    for i in range(100):
        data.train.__getitems__(list(range(i * 32, i * 32 + 32)))
    assert (time.perf_counter() - start) / 100 < 0.005


def test_resume_reuses_the_saved_preprocessor(synthetic: PreparedData, tmp_path: Path) -> None:
    config = DataConfig(
        synthetic_market="garch", synthetic_days=12, synthetic_symbols=("ES", "NQ"), **SMALL
    )
    synthetic.preprocessor.save(tmp_path / "p.json")
    resumed = prepare_data(config, preprocessor=Preprocessor.load(tmp_path / "p.json"))
    assert resumed.preprocessor == synthetic.preprocessor and resumed.summary == synthetic.summary
    for name, ds in splits_of(resumed).items():
        original = splits_of(synthetic)[name]
        assert torch.equal(ds.anchors, original.anchors)
        batch, expected = ds.__getitems__([0, 1]), original.__getitems__([0, 1])
        assert torch.equal(batch.past, expected.past) and torch.equal(batch.target, expected.target)
    other_seed = DataConfig(
        synthetic_market="garch",
        synthetic_days=12,
        synthetic_seed=1,
        synthetic_symbols=("ES", "NQ"),
        **SMALL,
    )
    assert (
        prepare_data(other_seed, preprocessor=synthetic.preprocessor).preprocessor
        is synthetic.preprocessor
    )


def test_resume_refuses_other_window_settings(synthetic: PreparedData) -> None:
    config = DataConfig(
        synthetic_market="garch",
        synthetic_days=12,
        synthetic_symbols=("ES", "NQ"),
        **{**SMALL, "lookback": 32},
    )
    with pytest.raises(
        ConfigError, match=r"DataConfig.lookback=32 differs from the saved preprocessor \(16\)"
    ):
        prepare_data(config, preprocessor=synthetic.preprocessor)
    config = DataConfig(
        synthetic_market="garch",
        synthetic_days=12,
        synthetic_symbols=("ES", "NQ"),
        max_gap="1h",
        **SMALL,
    )
    with pytest.raises(ConfigError, match=r"DataConfig.max_gap='1h' differs"):
        prepare_data(config, preprocessor=synthetic.preprocessor)


def test_latest_needs_complete_history(synthetic: PreparedData) -> None:
    short = generate_bars(days=1, seed=0).iloc[:20]  # >= lookback, but inside the warm-up
    with pytest.raises(
        DataError,
        match=r"symbol 'ES' has 20 bars; a forecast needs its last 16 with complete features, i.e. about 80 bars",
    ):
        latest_windows(synthetic.preprocessor, short)


def test_latest_takes_user_known_columns_from_a_future_frame(tmp_path: Path) -> None:
    """Known columns are never held at their last value: without their future rows the
    forecast is refused; with them, the model's future inputs are exactly those rows."""
    bars = generate_bars(days=6, seed=0).assign(holiday=0.0)
    bars.to_parquet(tmp_path / "x.parquet")
    data = prepare_data(
        DataConfig(path=tmp_path / "x.parquet", known_columns=("holiday",), **SMALL)
    )
    p = data.preprocessor
    with pytest.raises(DataError, match=r"known columns \['holiday'\] need their values"):
        latest_windows(p, bars)
    last = bars["timestamp"].iloc[-1:].dt.as_unit("ns").astype("int64").to_numpy()
    times_ns = forecast_times(
        last, spacing_ns=p.bar_spacing_ns, horizon=4, calendar=p.spec.calendar
    )
    times = pd.DatetimeIndex(times_ns[0]).tz_localize("UTC").tz_convert(p.timezone)
    future = pd.DataFrame({"timestamp": times, "holiday": [1.0, 0.0, 2.0, 0.0]})
    future = future.assign(symbol="default")  # a future file without a symbol column
    with pytest.raises(DataError, match=r"no row for symbol 'ES' at"):
        latest_windows(p, bars, future.iloc[:3])
    got = latest_windows(p, bars, future).batch.future[0, :, -1]  # [H]
    want = (np.array([1.0, 0.0, 2.0, 0.0]) - p.scaler.mean[-1]) / p.scaler.std[-1]
    torch.testing.assert_close(got, torch.from_numpy(want.astype(np.float32)))


def test_windows_carry_their_target_bars_log_ranges(synthetic: PreparedData) -> None:
    """The range loss's target: log(log(high / low)) of each target bar (rows anchor+1 ..
    anchor+H), read from the bars, never scaled; a flat bar has none (NaN)."""
    encoded = synthetic.encoded
    assert encoded is not None
    ds = synthetic.test
    batch = ds.__getitems__([0, len(ds) - 1])
    assert batch.target_range is not None and batch.anchor is not None
    high, low = encoded.frame["high"].to_numpy(), encoded.frame["low"].to_numpy()
    for b, anchor in enumerate(batch.anchor.tolist()):
        rows = slice(anchor + 1, anchor + 5)
        expected = np.log(np.log(high[rows] / low[rows])).astype(np.float32)
        np.testing.assert_allclose(batch.target_range[b].numpy(), expected, rtol=1e-6)
    flat = replace(encoded, frame=encoded.frame.assign(high=encoded.frame["low"]))
    assert np.isnan(flat.log_ranges()).all()
