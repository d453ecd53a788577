"""A long symbol's features a block of rows at a time (data/features/blocks.py): the blocks
cover every row once from a session-aligned prefix, give the unblocked inputs to 1e-5, stay causal, and hold a block's memory, not the symbol's."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest
from test_feature_library import SMALL, TZ, fitted_spec, valid_bars

from foxhunt.data import footprint
from foxhunt.data.features import blocks, compute_features
from foxhunt.data.features.bars import session_first_row, session_numbers
from foxhunt.data.features.compute import library_blocks
from foxhunt.data.features.spec import FeatureSpec
from foxhunt.data.instruments import generate_instruments

#: every group at short windows (the cross group too), and an EWM of span 48: the longest
#: warm-up is 49 bars, so a block's prefix reaches 980 bars back and then a session more
GROUPS = (*(g for g in SMALL if not g.startswith("trend")), "trend:6/48")
BLOCK = 700  # rows; 10 days of 5-minute bars are 2,760 a symbol: 4 blocks each


@pytest.fixture(scope="module")
def frame():  # type: ignore[no-untyped-def]
    return generate_instruments(days=10, seed=3, symbols=("CL", "ES"), bar_minutes=5)


@pytest.fixture(scope="module")
def spec(frame) -> FeatureSpec:  # type: ignore[no-untyped-def]
    return fitted_spec(frame, GROUPS)


def inputs(frame, spec: FeatureSpec) -> np.ndarray:  # type: ignore[no-untyped-def]
    valid, series = valid_bars(frame)
    return compute_features(valid, spec, timezone=TZ, symbol_codes=series).inputs


def test_blocks_cover_each_symbol_once_from_a_session_start_far_enough_back(frame, spec) -> None:  # type: ignore[no-untyped-def]
    valid, series = valid_bars(frame)
    times = pd.DatetimeIndex(valid["timestamp"]).as_unit("ns").asi8
    session = session_numbers(series, times, int(spec.session_gap_ns or 0))
    symbols = valid["symbol"].to_numpy()
    assert blocks.plan_blocks(symbols, session, spec.warmup_bars, rows=len(valid)) == [
        blocks.Block(0, 0, len(valid))
    ]  # no symbol longer than a block: the whole frame at once, as before
    plan = blocks.plan_blocks(symbols, session, spec.warmup_bars, rows=BLOCK)
    firsts, reach = session_first_row(session), blocks.WARMUPS * spec.warmup_bars
    kept = np.concatenate([np.arange(b.start, b.stop) for b in plan])
    assert (kept == np.arange(len(valid))).all()  # every row once, in order
    cut = 0
    for b in plan:
        mine = symbols[b.prefix : b.stop]
        assert (mine == mine[0]).all()  # one symbol's rows
        inside = b.prefix > 0 and symbols[b.prefix - 1] == symbols[b.prefix]
        if inside:  # not the symbol's first row: a session's, far enough back
            assert firsts[b.prefix] == b.prefix
            # at least the reach back, and a whole session before the one it lands in
            assert b.prefix <= b.start - reach
            assert session[b.prefix] < session[b.start - reach]
            cut += 1
    assert cut >= 2  # prefixes that start inside a symbol's rows were tried


@pytest.mark.parametrize("warmups", [blocks.WARMUPS, 1])
def test_blocked_inputs_are_the_whole_computation_to_a_few_float32_units(
    frame, spec, monkeypatch: pytest.MonkeyPatch, warmups: int
) -> None:  # type: ignore[no-untyped-def]
    """With one warm-up of reach (49 bars, a session is 276) only the session alignment
    gives the session statistics their rows; no EWM then (it would not have forgotten)."""
    if warmups == 1:
        spec = fitted_spec(frame, tuple(g for g in GROUPS if not g.startswith("trend")))
    whole = inputs(frame, spec)
    monkeypatch.setattr(blocks, "BLOCK_ROWS", BLOCK)
    monkeypatch.setattr(blocks, "WARMUPS", warmups)
    seen = []
    plan = blocks.plan_blocks
    monkeypatch.setattr(
        "foxhunt.data.features.compute.plan_blocks",
        lambda *a, **k: seen.append(plan(*a, **k)) or seen[-1],
    )
    part = inputs(frame, spec)
    assert len(seen[0]) > 2  # blocks, some merged where a prefix reaches the one before
    np.testing.assert_array_equal(np.isnan(part), np.isnan(whole))
    # the rolling sums and pandas' rolling std start at the prefix: their last bits differ
    # (measured: 88 of 400,000 values, at most 2.4e-7 apart, 1.4e-6 of kurt_3 = 3, where the
    # whole series' longer cumulative sums round more); the EWMs agree to the float32 unit
    np.testing.assert_allclose(part, whole, rtol=1e-5, atol=1e-6)
    assert (part != whole)[np.isfinite(whole)].mean() < 0.001


def test_a_change_at_one_bar_moves_no_earlier_blocked_input(
    frame, spec, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(blocks, "BLOCK_ROWS", BLOCK)
    before = inputs(frame, spec)
    changed = frame.copy()
    t = 2 * BLOCK + 40  # in the first symbol's third block
    changed.loc[t, ["high", "close", "volume"]] *= [1.05, 1.04, 9.0]
    after = inputs(changed, spec)
    np.testing.assert_array_equal(after[:t], before[:t])
    assert not np.array_equal(after[t], before[t], equal_nan=True)


def test_a_long_symbol_holds_a_block_not_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The streamed preparation's use (symbol_inputs.compute_symbol): blocks consumed one
    at a time. Python's allocation tracer sees numpy's and pandas' arrays."""
    one = generate_instruments(days=40, seed=3, symbols=("ES",), bar_minutes=1)  # 55,200 rows
    spec = fitted_spec(one, tuple(g for g in GROUPS if not g.startswith("cross")))
    valid, series = valid_bars(one)
    returns = np.log(valid["close"].to_numpy()) - np.log(valid["close"].shift().to_numpy())

    def peak() -> int:
        tracemalloc.start()
        for _, _, rows in library_blocks(valid, spec, TZ, series, returns):
            rows.sum()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    whole = peak()
    monkeypatch.setattr(blocks, "BLOCK_ROWS", 3000)
    monkeypatch.setattr(blocks, "WARMUPS", 1)  # a prefix of 1-2 sessions: blocks of 4-6,000
    blocked = peak()
    print(f"peak {blocked / 1e6:.1f} MB blocked, {whole / 1e6:.1f} MB whole")
    assert blocked < whole / 4, (blocked, whole)


def test_bars_without_session_breaks_are_one_computation_not_a_quadratic_one() -> None:
    """A 24-hour market has one session: every block's prefix would reach its first row, so
    the blocks merge into one computation of the whole symbol (the cost before blocks)."""
    rows, warmup = 5 * blocks.BLOCK_ROWS, 49
    symbols, one_session = np.zeros(rows, np.int8), np.zeros(rows, np.int64)
    assert blocks.plan_blocks(symbols, one_session, warmup) == [blocks.Block(0, 0, rows)]
    daily = np.arange(rows) // 1380  # 23-hour sessions of 1-minute bars
    plan = blocks.plan_blocks(symbols, daily, warmup)
    assert len(plan) == 5 and max(b.stop - b.prefix for b in plan) < 1.1 * blocks.BLOCK_ROWS


def test_the_streamed_memory_check_sizes_the_largest_block(spec: FeatureSpec) -> None:
    """footprint.check_symbol_fits: a symbol needs its largest block's matrix, plus the cross
    group's columns over every bar; gapless bars their whole matrix (one block)."""
    rows = 2_000_000
    times = np.arange(rows, dtype=np.int64) * 60_000_000_000  # 1-minute bars, no break
    series = np.zeros(rows, np.int64)
    gap = 3 * 60_000_000_000
    assert blocks.computed_rows(series, times, gap, spec.warmup_bars) == rows
    times[::1380] += 3_600_000_000_000  # an hour's break a day: sessions of 1,380 bars
    times = np.cumsum(np.diff(times, prepend=0))
    block = blocks.computed_rows(series, times, gap, spec.warmup_bars)
    assert blocks.BLOCK_ROWS < block <= blocks.BLOCK_ROWS + 20 * spec.warmup_bars + 2 * 1380
    windows = next(len(w) for g, w in spec.observed_groups if g.cross)
    cross = rows * (footprint.CROSS_ROW_BYTES + footprint.CROSS_WINDOW_BYTES * windows)
    assert footprint.symbol_bytes(rows, block, spec) == footprint.matrix_bytes(block, spec) + cross
