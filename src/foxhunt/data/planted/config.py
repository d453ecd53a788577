"""What a planted market plants: each volatility driver, switched on and off and sized."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from foxhunt.config_fields import FRACTION, SEED, Range, check_known_fields, check_ranges, setting
from foxhunt.errors import ConfigError

#: The drivers `PlantedConfig.without` switches off, by name.
DRIVERS = ("volume_lead", "event", "cross_lead", "regime")


@dataclass(frozen=True, kw_only=True)
class PlantedConfig:
    """A planted-signal market (data/planted/).

    Each bar's log return is ``sigma_t z_t`` (plus a reopening gap at a session's first bar),
    z unit-variance Student-t, and

        sigma_t = sigma_bar * season(minute) * event_t * exp(clip(volume_lead * x_t
                  + cross_lead * c_t, -1, 2)) * regime_t * sqrt(h_t)

    where ``x_t`` is the decayed sum of the symbol's past volume surprises (a volume spike
    leads volatility by one bar, then decays), ``event_t`` multiplies the volatility of the
    bar at ``event_minute`` on ``event_weekdays`` (a scheduled release: known in advance),
    ``c_t`` the decayed sum of the first symbol's past absolute returns in its own units (a
    cross-instrument lead, for every other symbol), ``regime_t`` a hidden two-state Markov
    regime that also shifts volume, and ``h_t`` a unit-mean GARCH(1,1) of the standardized
    returns (persistent volatility, which past returns show). Drivers at their off value
    (0, or 1 for the multipliers) plant nothing.

    Attributes:
        days: trading sessions of the calendar, from `start` (>= 1).
        seed: seeds every draw; the same config gives the same bars.
        symbols: instruments; the first one leads the others (`cross_lead`).
        bar_minutes: minutes per bar (1..60).
        start: first trading date (YYYY-MM-DD).
        calendar: pandas_market_calendars name of the sessions (docs/calendars.md).
        daily_vol: volatility of a session's return, about (> 0, < 0.5).
        garch_half_life: bars for half of a volatility shock to decay (persistent volatility).
        garch_alpha: GARCH weight of the last squared standardized return, in [0, 0.3].
        tail_dof: Student-t degrees of freedom of the shocks (> 2.5; 1000 = Gaussian, about).
        volume_lead: log-volatility per unit of decayed volume surprise (0 = off).
        volume_decay: per-bar decay of the volume surprise's effect, in [0, 1).
        spike_rate: share of bars with a volume spike, in [0, 1).
        spike_size: mean log-volume jump of a spike (uniform over half to 1.5 times it), >= 0.
        volume_noise: standard deviation of log volume around its profile (> 0).
        event_size: volatility multiplier of the scheduled release's bar (1 = off).
        event_weekdays: weekdays of the release (0 = Monday .. 4 = Friday).
        event_minute: minute of the local day at which the release's bar starts.
        cross_lead: log-volatility of every other symbol per unit of the first symbol's
            decayed absolute return (0 = off; needs two symbols or more).
        regime_size: volatility of the high regime over the low one (1 = off).
        regime_bars: mean bars a regime lasts (>= 2).
        regime_volume: log-volume shift in the high regime (its visibility in volume).
        reopen_gap: standard deviation of a session's opening move, in bar volatilities.
    """

    days: int = setting(60, range=Range(1, 10_000))
    seed: int = setting(0, range=SEED)
    symbols: tuple[str, ...] = ("ES",)
    bar_minutes: int = setting(5, range=Range(1, 60))
    start: str = "2025-01-06"
    calendar: str = "CME_Equity"
    daily_vol: float = setting(0.01, range=Range(0, 0.5, low_open=True, high_open=True))
    garch_half_life: float = setting(48.0, range=Range(1, 1e6))
    garch_alpha: float = setting(0.05, range=Range(0, 0.3))
    tail_dof: float = setting(6.0, range=Range(2.5, 1000, low_open=True))
    volume_lead: float = setting(0.8, range=Range(0, 3))
    volume_decay: float = setting(0.6, range=FRACTION)
    spike_rate: float = setting(0.05, range=FRACTION)
    spike_size: float = setting(1.2, range=Range(0, 5))
    volume_noise: float = setting(0.3, range=Range(0.01, 3))
    event_size: float = setting(4.0, range=Range(1, 20))
    event_weekdays: tuple[int, ...] = (1, 3)
    event_minute: int = setting(600, range=Range(0, 1439))
    cross_lead: float = setting(0.0, range=Range(0, 3))
    regime_size: float = setting(2.5, range=Range(1, 10))
    regime_bars: float = setting(400.0, range=Range(2, 1e7))
    regime_volume: float = setting(0.5, range=Range(0, 5))
    reopen_gap: float = setting(0.0, range=Range(0, 20))

    def __post_init__(self) -> None:
        check_ranges(self, "PlantedConfig")
        if not self.symbols or len(set(self.symbols)) != len(self.symbols):
            raise ConfigError(f"PlantedConfig.symbols={self.symbols!r}: need distinct names")
        if self.cross_lead > 0 and len(self.symbols) < 2:
            raise ConfigError(
                f"PlantedConfig.cross_lead={self.cross_lead}: a cross-instrument lead needs "
                "two symbols or more; add symbols or set cross_lead 0"
            )
        if any(not 0 <= d <= 4 for d in self.event_weekdays):
            raise ConfigError(
                f"PlantedConfig.event_weekdays={self.event_weekdays!r}: weekdays are 0..4"
            )
        if self.event_minute % self.bar_minutes:
            raise ConfigError(
                f"PlantedConfig.event_minute={self.event_minute}: must start a bar "
                f"(a multiple of bar_minutes={self.bar_minutes})"
            )
        _check_start(self.start)
        _check_calendar(self.calendar)

    def without(self, *drivers: str) -> PlantedConfig:
        """The same market with the named drivers (of `DRIVERS`) switched off."""
        unknown = sorted(set(drivers) - set(DRIVERS))
        if unknown:
            raise ConfigError(f"unknown drivers {unknown}; known: {list(DRIVERS)}")
        off: dict[str, Any] = {"volume_lead": 0.0, "event": 1.0, "cross_lead": 0.0, "regime": 1.0}
        names = {"volume_lead": "volume_lead", "event": "event_size",
                 "cross_lead": "cross_lead", "regime": "regime_size"}  # fmt: skip
        return replace(self, **{names[d]: off[d] for d in drivers})

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _json(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlantedConfig:
        check_known_fields(cls, data, "PlantedConfig")
        tuples = {"symbols", "event_weekdays"}
        values: dict[str, Any] = {k: tuple(v) if k in tuples else v for k, v in data.items()}
        return cls(**values)


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _check_start(start: str) -> None:
    """A date the bars can start on: the data layer refuses bars before 1971 (numbers read
    as epoch times), and `--start 1800-01-02` wrote bars that no run could read."""
    import pandas as pd

    try:
        first = pd.Timestamp(start, tz="UTC")
    except (ValueError, TypeError):
        raise ConfigError(f"PlantedConfig.start={start!r}: not a date (YYYY-MM-DD)") from None
    if not pd.Timestamp("1971-01-01", tz="UTC") <= first <= pd.Timestamp("2200-01-01", tz="UTC"):
        raise ConfigError(
            f"PlantedConfig.start={start!r}: give a date from 1971 to 2200 (bars before 1971 "
            "are refused by every door that reads bars)"
        )


def _check_calendar(name: str) -> None:
    from foxhunt.data.calendar import calendar_names

    if name not in calendar_names():  # the bars need sessions to fall in
        raise ConfigError(
            f"PlantedConfig.calendar={name!r}: not a pandas_market_calendars name; use one "
            "such as CME_Equity (docs/calendars.md)"
        )


def builtin_market(days: int, seed: int, symbols: tuple[str, ...]) -> PlantedConfig:
    """The built-in bars of `DataConfig(synthetic_market="planted")`: every default driver,
    and with several symbols the first one leading the others."""
    cross = 0.5 if len(symbols) > 1 else 0.0
    return PlantedConfig(days=days, seed=seed, symbols=tuple(symbols), cross_lead=cross)
