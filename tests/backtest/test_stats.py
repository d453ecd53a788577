"""Deflated Sharpe against the paper's numerical example; Sharpe, drawdown, bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from foxhunt.backtest.stats import (
    block_bootstrap,
    deflated_sharpe,
    expected_max_sharpe,
    max_drawdown,
    probabilistic_sharpe,
    sharpe,
)


def test_deflated_sharpe_matches_the_papers_example() -> None:
    # Bailey & Lopez de Prado (2014), section 4's example: N = 100 trials whose annualized
    # Sharpe ratios vary by V = 1/2, the best with annualized SR 2.5 over T = 1250 daily
    # returns, skewness -3, kurtosis 10 -> SR0 = 0.1132 (non-annualized) and DSR = 0.9004.
    # (Numbers as recalled from the paper; SR0 reproduces by hand: sqrt(0.5/250) *
    # (0.4228 * Z(0.99) + 0.5772 * Z(1 - 1/(100 e))) = 0.04472 * 2.5317.)
    days = 250
    out = deflated_sharpe(
        2.5 / math.sqrt(days),
        trials=100,
        trials_variance=0.5 / days,
        observations=1250,
        skewness=-3.0,
        kurt=10.0,
    )
    assert out["sr0"] == pytest.approx(0.1132, abs=5e-5)
    assert out["value"] == pytest.approx(0.9004, abs=1e-3)


def test_one_trial_deflates_to_the_probabilistic_sharpe_against_zero() -> None:
    assert expected_max_sharpe(1, 0.3) == 0.0
    # normal returns (skew 0, kurtosis 3): z = SR sqrt(T-1) / sqrt(1 + SR^2 / 2)
    sr, t = 0.1, 101
    z = sr * math.sqrt(t - 1) / math.sqrt(1 + sr**2 / 2)
    expected = 0.5 * (1 + math.erf(z / math.sqrt(2)))
    assert probabilistic_sharpe(sr, 0.0, t, 0.0, 3.0) == pytest.approx(expected, rel=1e-12)


def test_sharpe_and_drawdown_by_hand() -> None:
    r = np.array([1.0, -2.0, 3.0, -1.0])  # mean 0.25, sd (ddof 1) sqrt(4.9167)
    assert sharpe(r, 4) == pytest.approx(0.25 / math.sqrt(59 / 12) * 2)
    assert max_drawdown(np.array([1.0, -2.0, 3.0, -1.0, -3.0])) == pytest.approx(4.0)
    assert max_drawdown(np.array([-1.0, 2.0])) == pytest.approx(1.0)  # from the start at 0


def test_block_bootstrap_covers_the_mean_and_moves_whole_days() -> None:
    rng = np.random.default_rng(0)
    days = np.repeat(np.arange(40), 25)
    values = rng.normal(size=40)[days] + 0.1 * rng.normal(size=len(days))  # day effects
    low, high = block_bootstrap(values, days, 2000)
    assert low < values.mean() < high
    iid_low, iid_high = block_bootstrap(values, np.arange(len(values)), 2000)
    assert high - low > 2 * (iid_high - iid_low)  # correlated days: a wider, honest interval
