"""The forecast as a trading signal: one simple rule, net of costs.

Rule (the same for the TFT and every baseline). At a decision bar (the anchor of a forecast
window) the forecaster gives, per horizon step, quantiles of the bar's log return. Its
expected move over the horizon is the sum of the step medians, its spread the root sum of
squares of the steps' central interval half-widths (steps taken as independent). The position
is `clip(move / spread, -1, 1) * max_contracts`, entered only when the expected move in
dollars beats a round trip's cost (2 sides of slippage and commission); it is held for the
whole horizon, then the next decision is taken at the bar the position ends (windows do not
overlap). Consecutive trades only pay for the change of position; a position whose next
decision is not adjacent (a session break) is closed.

Costs per contract and side: `cost_ticks * tick_size * point_value + commission` (ES: 0.5
tick of 0.25 points at 50 USD per point, plus 2.25 USD).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from foxhunt.backtest.stats import max_drawdown, sharpe
from foxhunt.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class CostModel:
    """What trading the signal costs (defaults: ES).

    Attributes:
        tick_size: points per tick.
        cost_ticks: slippage per side, in ticks.
        commission: per contract and side, in the account currency.
        point_value: currency per point per contract.
        max_contracts: position at full conviction.
    """

    tick_size: float = 0.25  # points per tick
    cost_ticks: float = 0.5  # slippage per side, in ticks
    commission: float = 2.25  # per contract and side, in the account currency
    point_value: float = 50.0  # currency per point per contract
    max_contracts: float = 1.0

    def __post_init__(self) -> None:
        for name in ("tick_size", "point_value", "max_contracts"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ConfigError(f"--{name.replace('_', '-')} {value}: must be > 0")
        for name in ("cost_ticks", "commission"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"--{name.replace('_', '-')} {value}: must be >= 0")

    @property
    def per_side(self) -> float:
        """Cost of trading one contract once."""
        return self.cost_ticks * self.tick_size * self.point_value + self.commission


def positions(
    move_bp: np.ndarray, spread_bp: np.ndarray, price: np.ndarray, costs: CostModel
) -> np.ndarray:
    """[D] contracts from the expected move and spread (bp) over the horizon at `price`."""
    z = np.divide(move_bp, spread_bp, out=np.zeros_like(move_bp), where=spread_bp > 0)
    size = np.clip(z, -1.0, 1.0) * costs.max_contracts
    move_value = np.abs(price * np.expm1(move_bp / 1e4)) * costs.point_value
    return np.where(move_value > 2 * costs.per_side, size, 0.0)


def select_decisions(
    symbols: np.ndarray, origins: np.ndarray, exits: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows, in order: per symbol the first window, then the first whose
    origin is at or after the previous one's exit. Returns (indices, contiguous) where
    contiguous[i] says decision i starts where the previous one (same symbol) ended."""
    order = np.lexsort((origins, symbols))
    chosen: list[int] = []
    contiguous: list[bool] = []
    last_symbol, last_exit = None, None
    for i in order:
        if symbols[i] != last_symbol:
            last_symbol, last_exit = symbols[i], None
        if last_exit is not None and origins[i] < last_exit:
            continue
        contiguous.append(last_exit is not None and origins[i] == last_exit)
        chosen.append(int(i))
        last_exit = exits[i]
    return np.asarray(chosen, dtype=np.int64), np.asarray(contiguous, dtype=bool)


def trade_pnl(
    pos: np.ndarray, prices: np.ndarray, contiguous: np.ndarray, costs: CostModel
) -> dict[str, np.ndarray]:
    """Per-bar PnL of held positions.

    Args:
        pos: [D] contracts of each decision.
        prices: [D, H+1] the price at the decision bar and at each of the H bars held.
        contiguous: [D] the decision starts where the previous one ended (no close between).
    Returns [D, H] gross and net PnL per bar (costs charged at the entry and exit bars) and
    [D] contracts traded.
    """
    gross = pos[:, None] * np.diff(prices, axis=1) * costs.point_value
    previous = np.concatenate([[0.0], pos[:-1]])
    entered = np.abs(pos - np.where(contiguous, previous, 0.0))
    follows = np.concatenate([contiguous[1:], [False]])
    exited = np.where(follows, 0.0, np.abs(pos))  # closed unless the next decision takes over
    cost = np.zeros_like(gross)
    cost[:, 0] += entered * costs.per_side
    cost[:, -1] += exited * costs.per_side
    # the close before a non-contiguous decision was charged with that earlier position
    return {"gross": gross, "net": gross - cost, "traded": entered + exited}


def signal_metrics(
    gross: np.ndarray, net: np.ndarray, traded: np.ndarray, pos: np.ndarray, bars_per_year: float
) -> dict[str, Any]:
    """Net and gross PnL, turnover (contracts traded), hit rate (trades with net PnL > 0),
    annualized Sharpe of the per-bar net PnL, max drawdown of the net equity."""
    trades = pos != 0
    trade_net = net.sum(axis=1)
    return {
        "net_pnl": float(net.sum()),
        "gross_pnl": float(gross.sum()),
        "costs": float(gross.sum() - net.sum()),
        "turnover": float(traded.sum()),
        "trades": int(trades.sum()),
        "hit_rate": float(np.mean(trade_net[trades] > 0)) if trades.any() else float("nan"),
        "sharpe": sharpe(net.ravel(), bars_per_year),
        "gross_sharpe": sharpe(gross.ravel(), bars_per_year),
        "max_drawdown": max_drawdown(net.ravel()),
    }
