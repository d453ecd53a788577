"""Seeded synthetic bars of several futures with their own sessions, ticks, price levels,
volatilities and volumes in one frame: the multi-instrument case (ES, NQ, CL, ZN), for
tests and benchmarks.

The sessions are illustrative, in America/New_York: the equity index and crude oil futures
trade 18:00 - 17:00 on Globex; ZN here opens at 20:00 (a 21-hour session) so that one
instrument's bars start where the others' do not. Every series follows data/synthetic.py's
model (intraday U-shape, GARCH, Student-t shocks) at its own level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from foxhunt.data.synthetic import TIMEZONE, one_symbol


@dataclass(frozen=True, kw_only=True)
class Instrument:
    """One synthetic futures contract's market.

    Attributes:
        price: first price.
        tick: price increment; every price is a multiple of it.
        daily_vol: standard deviation of a session's log return.
        open_minute: minute of day (New York) of the session's open, the evening before
            its trading date.
        session_minutes: length of the session.
        volume_per_minute: average contracts traded per minute.
    """

    price: float
    tick: float
    daily_vol: float
    open_minute: int = 18 * 60
    session_minutes: int = 23 * 60
    volume_per_minute: float = 1500.0


INSTRUMENTS = {
    "ES": Instrument(price=5000.0, tick=0.25, daily_vol=0.010, volume_per_minute=1500.0),
    "NQ": Instrument(price=18000.0, tick=0.25, daily_vol=0.013, volume_per_minute=600.0),
    "CL": Instrument(price=75.0, tick=0.01, daily_vol=0.022, volume_per_minute=900.0),
    "ZN": Instrument(
        price=110.0,
        tick=1 / 64,
        daily_vol=0.004,
        open_minute=20 * 60,
        session_minutes=21 * 60,
        volume_per_minute=1200.0,
    ),
    "GC": Instrument(price=2300.0, tick=0.1, daily_vol=0.011, volume_per_minute=400.0),
    "6E": Instrument(price=1.08, tick=0.00005, daily_vol=0.005, volume_per_minute=500.0),
    "RTY": Instrument(price=2000.0, tick=0.1, daily_vol=0.014, volume_per_minute=300.0),
    "YM": Instrument(price=39000.0, tick=1.0, daily_vol=0.009, volume_per_minute=200.0),
    "ZB": Instrument(
        price=120.0,
        tick=1 / 32,
        daily_vol=0.007,
        open_minute=20 * 60,
        session_minutes=21 * 60,
        volume_per_minute=350.0,
    ),
    "NG": Instrument(price=2.5, tick=0.001, daily_vol=0.035, volume_per_minute=450.0),
}


def _stamps(days: int, bar_minutes: int, start: str, spec: Instrument) -> pd.DatetimeIndex:
    dates = pd.bdate_range(start, periods=days)
    opens = dates - pd.Timedelta(minutes=24 * 60 - spec.open_minute)
    offsets = np.arange(spec.session_minutes // bar_minutes, dtype=np.int64) * bar_minutes
    naive = opens.as_unit("ns").asi8[:, None] + offsets[None, :] * 60_000_000_000
    return pd.DatetimeIndex(naive.ravel().astype("datetime64[ns]")).tz_localize(TIMEZONE)


def generate_instruments(
    *,
    days: int,
    seed: int,
    symbols: tuple[str, ...] = ("ES", "NQ", "CL", "ZN"),
    bar_minutes: int = 5,
    start: str = "2025-01-06",
) -> pd.DataFrame:
    """`days` sessions of bars per symbol of INSTRUMENTS, deterministic given `seed`; columns
    as `generate_bars`'s, sorted by symbol then time."""
    unknown = [s for s in symbols if s not in INSTRUMENTS]
    if unknown or days < 1 or not 1 <= bar_minutes <= 60:
        raise ValueError(f"need symbols of {sorted(INSTRUMENTS)}, days >= 1: {unknown} {days}")
    frames = []
    for i, symbol in enumerate(sorted(symbols)):
        spec = INSTRUMENTS[symbol]
        stamps = _stamps(days, bar_minutes, start, spec)
        per_session = spec.session_minutes // bar_minutes
        minute = (spec.open_minute + np.arange(per_session) * bar_minutes) % (24 * 60)
        columns = one_symbol(
            np.random.default_rng([seed, i]),
            days=days,
            per_session=per_session,
            minute=minute,
            bar_minutes=bar_minutes,
            price=spec.price,
            reopen_gap=0.5,
            tick=spec.tick,
            daily_vol=spec.daily_vol,
            session_minutes=spec.session_minutes,
            volume_per_minute=spec.volume_per_minute,
        )
        frame = pd.DataFrame({"timestamp": stamps, **columns})
        frame["symbol"] = symbol
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
