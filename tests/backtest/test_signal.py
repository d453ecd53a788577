"""The signal rule's PnL on a hand-computed 10-bar example with costs."""

from __future__ import annotations

import numpy as np
import pytest

from foxhunt.backtest.signal import (
    CostModel,
    positions,
    select_decisions,
    signal_metrics,
    trade_pnl,
)

ES = CostModel()  # 0.25-point tick, 0.5 tick slippage, 2.25 commission, 50 per point


def test_es_cost_per_contract_and_side() -> None:
    assert ES.per_side == pytest.approx(0.5 * 0.25 * 50 + 2.25)  # 6.25 + 2.25 = 8.5


def test_ten_bars_by_hand() -> None:
    # 10 bars of prices; horizon 3: decisions at bars 0, 3, 6 hold over bars 0-3, 3-6, 6-9
    prices = np.array([100.0, 101.0, 100.5, 102.0, 101.0, 101.5, 100.0, 99.0, 99.5, 98.0])
    paths = np.stack([prices[0:4], prices[3:7], prices[6:10]])
    pos = np.array([1.0, 1.0, -1.0])  # long, still long, short
    contiguous = np.array([False, True, True])
    out = trade_pnl(pos, paths, contiguous, ES)
    # gross: +1 * (102 - 100) * 50 = 100; +1 * (100 - 102) * 50 = -100; -1 * (98 - 100) * 50 = 100
    np.testing.assert_allclose(out["gross"].sum(axis=1), [100.0, -100.0, 100.0])
    np.testing.assert_allclose(out["gross"][0], [50.0, -25.0, 75.0])
    # traded: buy 1 at bar 0, nothing at bar 3, sell 2 at bar 6, buy 1 back at bar 9: 4 contracts
    np.testing.assert_allclose(out["traded"], [1.0, 0.0, 3.0])
    cost = 4 * 8.5
    assert out["net"].sum() == pytest.approx(100.0 - cost)
    np.testing.assert_allclose(out["net"][0], [50.0 - 8.5, -25.0, 75.0])
    np.testing.assert_allclose(out["net"][2], [-1 * -1 * 50 - 2 * 8.5, -25.0, 75.0 - 8.5])
    m = signal_metrics(out["gross"], out["net"], out["traded"], pos, bars_per_year=9)
    assert m["gross_pnl"] == pytest.approx(100.0)
    assert m["net_pnl"] == pytest.approx(66.0)
    assert m["turnover"] == pytest.approx(4.0)
    assert m["hit_rate"] == pytest.approx(2 / 3)  # trades 0 and 2 net positive
    net = out["net"].ravel()
    assert m["sharpe"] == pytest.approx(net.mean() / net.std(ddof=1) * 3)
    equity = np.cumsum(net)
    assert m["max_drawdown"] == pytest.approx(np.max(np.maximum.accumulate(np.r_[0, equity]) -
                                                     np.r_[0, equity]))  # fmt: skip


def test_a_break_closes_the_position() -> None:
    paths = np.array([[100.0, 101.0], [101.0, 100.0]])
    out = trade_pnl(np.array([1.0, 1.0]), paths, np.array([False, False]), ES)
    np.testing.assert_allclose(out["traded"], [2.0, 2.0])  # in and out, twice


def test_positions_enter_only_when_the_move_beats_a_round_trip() -> None:
    price = np.full(3, 5000.0)
    # a 1 bp move at 5000 is 0.5 points = 25 USD < 17 USD round trip? no: 25 > 17, entered
    pos = positions(np.array([1.0, 0.5, -4.0]), np.array([2.0, 2.0, 2.0]), price, ES)
    np.testing.assert_allclose(pos, [0.5, 0.0, -1.0])  # 0.5 bp = 12.5 USD < 17: flat


def test_decisions_do_not_overlap() -> None:
    symbols = np.array(["ES"] * 6)
    origins = np.array([0, 1, 2, 3, 7, 8])
    exits = origins + 3
    chosen, contiguous = select_decisions(symbols, origins, exits)
    np.testing.assert_array_equal(chosen, [0, 3, 4])
    np.testing.assert_array_equal(contiguous, [False, True, False])
