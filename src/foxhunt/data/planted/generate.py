"""The planted market's bars: sessions of a calendar, filled bar by bar by `dynamics.step`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from foxhunt.data.planted.config import PlantedConfig
from foxhunt.data.planted.dynamics import Bar, Clock, Law, Observable, Shocks, step
from foxhunt.data.synthetic import BASE_PRICES, intraday_volatility
from foxhunt.errors import ConfigError

TIMEZONE = "America/New_York"  # the clock of the season and the release
VOLUME_PER_MINUTE = 1500.0
_NS_PER_MINUTE = 60_000_000_000


@dataclass(frozen=True)
class Timeline:
    """The bars' start times (UTC ns, [T]) and their calendar facts."""

    times_ns: np.ndarray
    minute: np.ndarray  # [T] minute of the local day
    weekday: np.ndarray  # [T] 0 = Monday
    opening: np.ndarray  # [T] bool: a session's first bar

    def clock(self, cfg: PlantedConfig, symbols: int) -> Clock:
        """[T, S] clock of every bar (every symbol shares the calendar)."""
        season = intraday_volatility(self.minute)
        release = np.isin(self.weekday, cfg.event_weekdays) & (self.minute == cfg.event_minute)
        event = np.where(release, cfg.event_size, 1.0)

        def wide(a: np.ndarray) -> np.ndarray:
            return np.repeat(a.astype(np.float64)[:, None], symbols, axis=1)

        return Clock(season=wide(season), event=wide(event), opening=wide(self.opening))


@dataclass(frozen=True)
class PlantedBars:
    """The bars (`frame`: timestamp, open, high, low, close, volume, symbol, sorted by symbol
    then time, as `generate_bars`), the latent path behind them in the same row order
    (`latent`: sigma, high regime, h, x, c), and the config that made them."""

    frame: pd.DataFrame
    latent: pd.DataFrame
    config: PlantedConfig


def timeline(cfg: PlantedConfig) -> Timeline:
    """Every bar of the first `days` sessions of the calendar from `start`."""
    from foxhunt.data.calendar import load_sessions

    try:
        first = pd.Timestamp(cfg.start, tz="UTC")
    except ValueError:
        raise ConfigError(f"PlantedConfig.start={cfg.start!r}: not a date (YYYY-MM-DD)") from None
    end = first + pd.Timedelta(days=int(cfg.days * 1.6) + 14)
    sessions = load_sessions(cfg.calendar, first.value, end.value)
    keep = np.flatnonzero(sessions.dates >= np.datetime64(first.date()))[: cfg.days]
    step_ns = cfg.bar_minutes * _NS_PER_MINUTE
    starts = [
        np.arange(sessions.open_ns[i], sessions.close_ns[i], step_ns, dtype=np.int64) for i in keep
    ]
    times = np.concatenate(starts)
    opening = np.zeros(len(times), dtype=bool)
    opening[np.cumsum([0] + [len(s) for s in starts[:-1]])] = True
    local = pd.DatetimeIndex(times).tz_localize("UTC").tz_convert(TIMEZONE)
    minute = (local.hour * 60 + local.minute).to_numpy()
    return Timeline(times, minute, local.day_of_week.to_numpy(), opening)


def draws(cfg: PlantedConfig, bars: int) -> tuple[np.ndarray, Shocks]:
    """The first regime of each symbol [S] and every bar's shocks [T, S]: all the market's
    randomness, drawn before any bar is made (so a test can plant a change at one bar)."""
    rng = np.random.default_rng([cfg.seed, 3])
    symbols = len(cfg.symbols)
    first = rng.random(symbols) < 0.5
    return first, Shocks.draw(rng, (bars, symbols), Law.of(cfg))


def simulate(
    law: Law, clock: Clock, first: np.ndarray, shocks: Shocks
) -> tuple[list[Bar], list[Observable]]:
    """Every bar in order, and the observable state before each; `first` [S]: the regime
    before the first bar."""
    state = Observable.start(first.shape)
    high = first
    bars, states = [], []
    for t in range(len(clock.season)):
        now = Clock(clock.season[t], clock.event[t], clock.opening[t])
        states.append(state)
        bar, state = step(law, state, high, now, shocks.at(t))
        high = bar.high
        bars.append(bar)
    return bars, states


def generate_planted(
    cfg: PlantedConfig, shocks: tuple[np.ndarray, Shocks] | None = None
) -> PlantedBars:
    """The planted market `cfg` describes; the same config gives the same bars. `shocks`:
    `draws(cfg, bars)` as given (a planted change), instead of the seed's."""
    line = timeline(cfg)
    symbols = len(cfg.symbols)
    law = Law.of(cfg)
    clock = line.clock(cfg, symbols)
    first, drawn = shocks if shocks is not None else draws(cfg, len(line.times_ns))
    bars, states = simulate(law, clock, first, drawn)

    def column(values: list[np.ndarray]) -> np.ndarray:
        return np.stack(values).T.ravel()  # [S * T]: symbol-major, as the frame

    r = np.stack([b.r for b in bars])  # [T, S]
    log_close = np.cumsum(r, axis=0) + np.log([_price(s, i) for i, s in enumerate(cfg.symbols)])
    log_open = np.vstack([log_close[:1] - r[:1], log_close[:-1]])
    up = np.maximum(log_open, log_close) + np.stack([b.wick_up for b in bars])
    down = np.minimum(log_open, log_close) - np.stack([b.wick_down for b in bars])
    profile = VOLUME_PER_MINUTE * cfg.bar_minutes * clock.season**1.8
    surprise = np.stack([b.surprise for b in bars])
    volume = np.round(profile * np.exp(surprise + law.surprise_mean)).astype(np.int64)
    stamps = pd.DatetimeIndex(np.tile(line.times_ns, symbols)).tz_localize("UTC")
    frame = pd.DataFrame(
        {
            "timestamp": stamps.tz_convert(TIMEZONE),
            "open": np.exp(log_open).T.ravel(),
            "high": np.exp(up).T.ravel(),
            "low": np.exp(down).T.ravel(),
            "close": np.exp(log_close).T.ravel(),
            "volume": np.maximum(volume, 1).T.ravel(),
            "symbol": np.repeat(np.asarray(cfg.symbols, dtype=object), len(line.times_ns)),
        }
    )
    latent = pd.DataFrame(
        {
            "sigma": column([b.sigma for b in bars]),
            "high": column([b.high for b in bars]),
            "h": column([s.h for s in states]),
            "x": column([s.x for s in states]),
            "c": column([s.c for s in states]),
        }
    )
    return PlantedBars(frame=frame, latent=latent, config=cfg)


def _price(symbol: str, i: int) -> float:
    return BASE_PRICES.get(symbol, 100.0 * (i + 1))
