"""The planted market's own conditional quantiles of each bar's next returns.

Two oracles, both Monte Carlo over `dynamics.step`, the generator's own law:
- from the bars: the observable state (GARCH variance, decayed volume surprise, decayed leader
  returns) is recomputed from the bars alone, and the hidden regime enters as its filtered
  probability (a Hamilton filter on each bar's volume, wicks and return): the best any
  forecaster of these bars can do, in expectation;
- from the latent state: the true regime at the anchor (the floor; nothing observable
  reaches it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from foxhunt.data.planted.config import PlantedConfig
from foxhunt.data.planted.dynamics import (
    WICK,
    Clock,
    Law,
    Observable,
    Shocks,
    advance,
    base_scale,
    step,
)
from foxhunt.data.planted.generate import VOLUME_PER_MINUTE, Timeline, timeline
from foxhunt.errors import DataError

Kind = Literal["bars", "latent"]
PATH_CHUNK = 2_000_000  # simulated values held at once (windows x paths x symbols)


@dataclass(frozen=True)
class OracleForecast:
    """Quantiles [W, S, H, Q] of the returns after each anchor bar, for each symbol."""

    symbols: tuple[str, ...]
    anchors_ns: np.ndarray  # [W] UTC ns of the anchors (each window's last observed bar)
    quantiles: np.ndarray  # [W, S, H, Q]
    kind: Kind

    def lookup(self, symbols: np.ndarray, anchors_ns: np.ndarray) -> np.ndarray:
        """[N, H, Q] for windows given by symbol names and anchor times (NaN if absent)."""
        row = np.searchsorted(self.anchors_ns, anchors_ns)
        row = np.minimum(row, len(self.anchors_ns) - 1)
        found = self.anchors_ns[row] == anchors_ns
        col = np.asarray([self.symbols.index(s) if s in self.symbols else -1 for s in symbols])
        out = self.quantiles[row, np.maximum(col, 0)]
        out[~found | (col < 0)] = np.nan
        return out


@dataclass(frozen=True)
class Observed:
    """What the bars show, [T, S] each, in the generator's own units."""

    r: np.ndarray
    surprise: np.ndarray
    wick_up: np.ndarray
    wick_down: np.ndarray


def observe(frame: pd.DataFrame, cfg: PlantedConfig, law: Law, clock: Clock) -> Observed:
    """The bars as the generator's quantities; DataError if they are not `cfg`'s bars."""
    expected = timeline(cfg).times_ns
    columns = []
    for symbol in cfg.symbols:
        rows = frame[frame["symbol"] == symbol]
        times = pd.DatetimeIndex(rows["timestamp"]).tz_convert("UTC").as_unit("ns").asi8
        if not np.array_equal(times, expected):
            raise DataError(
                f"the bars of {symbol} do not follow PlantedConfig's calendar "
                f"({cfg.calendar}, {cfg.days} days from {cfg.start}): no oracle for them"
            )
        columns.append(rows)
    log = {k: np.stack([np.log(c[k].to_numpy(float)) for c in columns], axis=1)
           for k in ("open", "high", "low", "close", "volume")}  # fmt: skip
    profile = VOLUME_PER_MINUTE * cfg.bar_minutes * clock.season**1.8
    top = np.maximum(log["open"], log["close"])
    bottom = np.minimum(log["open"], log["close"])
    return Observed(
        r=log["close"] - log["open"],
        surprise=log["volume"] - np.log(profile) - law.surprise_mean,
        wick_up=log["high"] - top,
        wick_down=bottom - log["low"],
    )


def observable_path(law: Law, clock: Clock, seen: Observed) -> list[Observable]:
    """The observable state before each bar, and after the last: T + 1 states."""
    state = Observable.start(seen.r.shape[1:])
    path = [state]
    for t in range(len(seen.r)):
        now = Clock(clock.season[t], clock.event[t], clock.opening[t])
        state = advance(law, state, now, seen.r[t], seen.surprise[t])
        path.append(state)
    return path


def regime_probability(
    law: Law, clock: Clock, seen: Observed, path: list[Observable]
) -> np.ndarray:
    """[T, S] P(high regime at bar t | bars up to t): a Hamilton filter."""
    from scipy import stats

    h = np.stack([s.h for s in path[:-1]])
    base = base_scale(
        law,
        Observable(h, np.stack([s.x for s in path[:-1]]), np.stack([s.c for s in path[:-1]])),
        clock,
    )
    loglik = []
    for level, flag in ((law.low, 0.0), (law.high, 1.0)):
        sigma = base * level * np.sqrt(h)
        volume = _volume_loglik(law, seen.surprise + law.surprise_mean - law.shift * flag)
        wicks = _halfnormal(seen.wick_up, WICK * sigma) + _halfnormal(seen.wick_down, WICK * sigma)
        z = seen.r / (sigma * law.t_scale)
        ret = stats.t.logpdf(z, law.dof) - np.log(sigma * law.t_scale)
        loglik.append(volume + wicks + np.where(clock.opening > 0, 0.0, ret))
    ratio = np.exp(np.clip(loglik[1] - loglik[0], -700, 700))  # high over low
    p = np.full(seen.r.shape[1], 0.5)
    out = np.empty_like(seen.r)
    for t in range(len(seen.r)):
        prior = p * (1 - law.switch) + (1 - p) * law.switch
        p = prior * ratio[t] / (prior * ratio[t] + 1 - prior)
        out[t] = p
    return out


def _volume_loglik(law: Law, v: np.ndarray) -> np.ndarray:
    from scipy import stats

    calm = (1 - law.spike_rate) * stats.norm.pdf(v, scale=law.volume_noise)
    if law.spike_rate == 0 or law.spike_size == 0:
        return np.log(calm + 1e-300)
    # a spike of spike_size x U[0.5, 1.5) plus the normal noise
    lo, hi = 0.5 * law.spike_size, 1.5 * law.spike_size
    noise = law.volume_noise
    spread = stats.norm.cdf((v - lo) / noise) - stats.norm.cdf((v - hi) / noise)
    spiked = law.spike_rate * spread / (hi - lo)
    return np.log(calm + spiked + 1e-300)


def _halfnormal(w: np.ndarray, scale: np.ndarray) -> np.ndarray:
    from scipy import stats

    return np.log(2.0) + stats.norm.logpdf(w / scale) - np.log(scale)


@dataclass(frozen=True)
class BarsRead:
    """The bars as the oracle reads them: the law, the calendar, what they show, and the
    observable state before each bar (T + 1 states)."""

    law: Law
    line: Timeline
    clock: Clock
    seen: Observed
    path: list[Observable]


def read_bars(frame: pd.DataFrame, cfg: PlantedConfig) -> BarsRead:
    law = Law.of(cfg)
    line = timeline(cfg)
    clock = line.clock(cfg, len(cfg.symbols))
    seen = observe(frame, cfg, law, clock)
    return BarsRead(law, line, clock, seen, observable_path(law, clock, seen))


def oracle_quantiles(
    frame: pd.DataFrame,
    cfg: PlantedConfig,
    *,
    horizon: int,
    quantiles: tuple[float, ...],
    anchors_ns: np.ndarray | None = None,
    kind: Kind = "bars",
    latent_high: np.ndarray | None = None,
    paths: int = 1000,
    seed: int = 0,
    state: BarsRead | None = None,
) -> OracleForecast:
    """The oracle's quantiles of the next `horizon` returns after each anchor bar (every bar
    with `horizon` bars after it, or those at `anchors_ns`). `kind="latent"` needs the true
    regime path, `latent_high` [T, S] (`PlantedBars.latent["high"]`, reshaped). `state`:
    `read_bars(frame, cfg)` already done (both oracles of one run read the bars once)."""
    read = state if state is not None else read_bars(frame, cfg)
    law, line, clock, seen, path = read.law, read.line, read.clock, read.seen, read.path
    if kind == "latent":
        if latent_high is None:
            raise ValueError("the latent oracle needs the true regime path (latent_high)")
        start_high = latent_high.astype(np.float64)
    else:
        start_high = regime_probability(law, clock, seen, path)
    usable = np.arange(len(line.times_ns) - horizon)
    if anchors_ns is not None:
        usable = usable[np.isin(line.times_ns[usable], anchors_ns)]
    rng = np.random.default_rng([seed, 7])
    out = np.empty((len(usable), len(cfg.symbols), horizon, len(quantiles)))
    chunk = max(1, PATH_CHUNK // (paths * len(cfg.symbols)))
    for lo in range(0, len(usable), chunk):
        at = usable[lo : lo + chunk]
        out[lo : lo + chunk] = _simulate(law, clock, path, start_high, at, horizon, quantiles,
                                         paths, rng)  # fmt: skip
    return OracleForecast(tuple(cfg.symbols), line.times_ns[usable], out, kind)


def _simulate(
    law: Law,
    clock: Clock,
    path: list[Observable],
    start_high: np.ndarray,
    at: np.ndarray,
    horizon: int,
    quantiles: tuple[float, ...],
    paths: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """[len(at), S, H, Q]: `paths` futures of each anchor, from the state after it."""
    s = start_high.shape[1]
    shape = (len(at), paths, s)

    def spread(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a[:, None, :], shape).copy()

    state = Observable(*(spread(np.stack([getattr(path[i + 1], k) for i in at]))
                         for k in ("h", "x", "c")))  # fmt: skip
    high = rng.random(shape) < spread(start_high[at])
    draws = []
    for k in range(1, horizon + 1):
        now = Clock(
            *(getattr(clock, f)[at + k][:, None, :] for f in ("season", "event", "opening"))
        )
        bar, state = step(law, state, high, now, Shocks.draw(rng, shape, law))
        high = bar.high
        draws.append(bar.r)
    r = np.stack(draws, axis=-1)  # [W, M, S, H]
    return np.moveaxis(np.quantile(r, quantiles, axis=1), 0, -1)  # [W, S, H, Q]
