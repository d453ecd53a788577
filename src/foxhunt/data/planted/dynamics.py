"""The planted market's law: one step of every symbol, from a state, a clock and shocks.

The generator applies `step` bar after bar; the oracle applies the same `step` to many
simulated paths at once, so its quantiles are the generator's law by construction. Arrays are
[..., S] (S symbols, the first one the leader); any leading shape (paths, windows) broadcasts.
`advance` is the part of a step that the bars show: it moves the observable state (GARCH
variance, decayed volume surprise, decayed leader returns) with a bar's return and volume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from foxhunt.data.planted.config import PlantedConfig

SESSION_MINUTES = 23 * 60
WICK = 0.6  # a bar's high and low wicks: |N(0, 1)| x WICK x its volatility, in log price
E_CLIP = 50.0  # cap on a squared standardized return fed to the GARCH (one crash bar)
CROSS_CAP = 4.0  # cap on the leader's absolute return, in its own bar volatilities
LEAD_RANGE = (-1.0, 2.0)  # the drivers' log-volatility, bounded: a run of spikes saturates
CROSS_MEAN = 0.8  # about E|z|: the leader's decayed moves sum to about 0 on average


@dataclass(frozen=True)
class Law:
    """The constants a step needs, derived once from a `PlantedConfig`."""

    sigma_bar: float
    omega: float
    alpha: float
    beta: float
    dof: float
    t_scale: float  # Student-t draws times this have unit variance
    low: float  # the regimes' volatility multipliers, unit mean square between them
    high: float
    switch: float  # probability per bar of leaving the regime
    shift: float  # log-volume shift of the high regime
    volume_lead: float
    volume_decay: float
    spike_rate: float
    spike_size: float
    volume_noise: float
    cross_lead: float
    reopen_gap: float
    surprise_mean: float  # subtracted from log-volume surprises so they centre near 0

    @classmethod
    def of(cls, cfg: PlantedConfig) -> Law:
        persistence = math.exp(-math.log(2.0) / cfg.garch_half_life)
        alpha = min(cfg.garch_alpha, persistence)
        beta = persistence - alpha
        regime = cfg.regime_size > 1.0
        low = math.sqrt(2.0 / (1.0 + cfg.regime_size**2))
        shift = cfg.regime_volume if regime else 0.0
        return cls(
            sigma_bar=cfg.daily_vol * math.sqrt(cfg.bar_minutes / SESSION_MINUTES),
            omega=1.0 - persistence,
            alpha=alpha,
            beta=beta,
            dof=cfg.tail_dof,
            t_scale=math.sqrt((cfg.tail_dof - 2.0) / cfg.tail_dof),
            low=low,
            high=low * cfg.regime_size,
            switch=1.0 / cfg.regime_bars if regime else 0.0,
            shift=shift,
            volume_lead=cfg.volume_lead,
            volume_decay=cfg.volume_decay,
            spike_rate=cfg.spike_rate,
            spike_size=cfg.spike_size,
            volume_noise=cfg.volume_noise,
            cross_lead=cfg.cross_lead,
            reopen_gap=cfg.reopen_gap,
            surprise_mean=cfg.spike_rate * cfg.spike_size + shift / 2.0,
        )


@dataclass(frozen=True)
class Clock:
    """What the calendar fixes about one bar, per symbol [S]: known in advance."""

    season: np.ndarray  # intraday volatility multiplier
    event: np.ndarray  # the release's multiplier (1 on other bars)
    opening: np.ndarray  # float 1.0 at a session's first bar


@dataclass(frozen=True)
class Observable:
    """The state the bars show, before a bar: [..., S] each."""

    h: np.ndarray  # GARCH variance (unit mean)
    x: np.ndarray  # decayed volume surprise
    c: np.ndarray  # decayed leader absolute return (0 for the leader)

    @classmethod
    def start(cls, shape: tuple[int, ...]) -> Observable:
        return cls(np.ones(shape), np.zeros(shape), np.zeros(shape))


@dataclass(frozen=True)
class Shocks:
    """One bar's random draws, [..., S] each."""

    switch: np.ndarray  # uniform: the regime switches when below Law.switch
    spike: np.ndarray  # uniform: a volume spike when below Law.spike_rate
    spike_size: np.ndarray  # uniform in [0.5, 1.5): the spike's share of Law.spike_size
    noise: np.ndarray  # standard normal: log volume
    z: np.ndarray  # unit-variance Student-t: the return
    gap: np.ndarray  # standard normal: the reopening move
    wick_up: np.ndarray  # standard normal
    wick_down: np.ndarray  # standard normal

    def at(self, t: int) -> Shocks:
        """Bar t's draws of shocks drawn for many bars at once ([T, ...])."""
        return Shocks(**{k: v[t] for k, v in vars(self).items()})

    @classmethod
    def draw(cls, rng: np.random.Generator, shape: tuple[int, ...], law: Law) -> Shocks:
        return cls(
            switch=rng.random(shape),
            spike=rng.random(shape),
            spike_size=rng.uniform(0.5, 1.5, shape),
            noise=rng.standard_normal(shape),
            z=rng.standard_t(law.dof, shape) * law.t_scale,
            gap=rng.standard_normal(shape),
            wick_up=rng.standard_normal(shape),
            wick_down=rng.standard_normal(shape),
        )


@dataclass(frozen=True)
class Bar:
    """One bar's outcome, [..., S] each."""

    r: np.ndarray  # log return, close over the previous close
    surprise: np.ndarray  # log volume over its profile, less Law.surprise_mean
    sigma: np.ndarray  # the return's volatility (without the reopening move)
    wick_up: np.ndarray  # log high over max(log open, log close)
    wick_down: np.ndarray  # min(log open, log close) over log low
    high: np.ndarray  # bool: the regime the bar was in


def base_scale(law: Law, state: Observable, clock: Clock) -> np.ndarray:
    """sigma_t without the regime and the GARCH: what the calendar and drivers set."""
    lead = np.clip(law.volume_lead * state.x + law.cross_lead * state.c, *LEAD_RANGE)
    return law.sigma_bar * clock.season * clock.event * np.exp(lead)


def step(
    law: Law, state: Observable, high: np.ndarray, clock: Clock, shocks: Shocks
) -> tuple[Bar, Observable]:
    """One bar from the state before it (`high`: the previous bar's regime)."""
    high = high ^ (shocks.switch < law.switch)
    base = base_scale(law, state, clock)
    sigma = base * np.where(high, law.high, law.low) * np.sqrt(state.h)
    r = sigma * shocks.z + clock.opening * law.reopen_gap * law.sigma_bar * shocks.gap
    spike = (shocks.spike < law.spike_rate) * law.spike_size * shocks.spike_size
    surprise = law.shift * high + spike + law.volume_noise * shocks.noise - law.surprise_mean
    bar = Bar(
        r=r,
        surprise=surprise,
        sigma=sigma,
        wick_up=WICK * np.abs(shocks.wick_up) * sigma,
        wick_down=WICK * np.abs(shocks.wick_down) * sigma,
        high=high,
    )
    return bar, advance(law, state, clock, r, surprise)


def advance(
    law: Law, state: Observable, clock: Clock, r: np.ndarray, surprise: np.ndarray
) -> Observable:
    """The observable state after a bar with return `r` and volume surprise `surprise`."""
    base = base_scale(law, state, clock)
    e2 = np.minimum((r / base) ** 2, E_CLIP)
    h = law.omega + law.alpha * e2 + law.beta * state.h
    x = law.volume_decay * state.x + surprise
    c = state.c
    if law.cross_lead > 0.0:  # every symbol but the first follows the first one's moves
        # the leader's move in its own observable volatility: about |z| times its regime
        lead = np.abs(r[..., :1]) / (base[..., :1] * np.sqrt(state.h[..., :1]))
        pulse = np.minimum(lead, CROSS_CAP) - CROSS_MEAN
        c = law.volume_decay * state.c + pulse
        c[..., 0] = 0.0
    return Observable(h=h, x=x, c=c)
