"""Synthetic E-mini-like futures bars: Globex sessions, clustered and intraday-shaped volatility.

Each trading date's session opens at 18:00 ET on the previous evening and closes at 17:00 ET
(bars labeled by their start, 18:00 .. 16:55 for 5-minute bars), so there is a daily one-hour
maintenance break and a weekend from Friday 17:00 to Sunday 18:00. Bars follow wall-clock
time in America/New_York, so daylight-saving shifts move them in UTC, as real bars do.

Per-bar log returns are  r_t = sigma_bar * s(minute_t) * d(session_t) * sqrt(h_t) * z_t  with
  s  an intraday U-shape (peaks at the 09:30 cash open and the 16:00 close),
  d  a persistent day-level volatility factor (log-AR(1) across sessions),
  h  a GARCH(1,1) variance with unit mean: h_t = w + a h_{t-1} z_{t-1}^2 + b h_{t-1},
  z  unit-variance Student-t(5) shocks.
Past returns therefore predict future volatility, which a TFT can learn and a forecast of
unconditional quantiles cannot.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TIMEZONE = "America/New_York"
TICK = 0.25
SESSION_OPEN_MINUTE = 18 * 60  # the evening before the trading date
SESSION_MINUTES = 23 * 60
DAILY_VOL = 0.01  # ~16% a year
BASE_PRICES = {"ES": 5000.0, "NQ": 18000.0, "YM": 39000.0, "RTY": 2000.0, "MES": 5000.0}
GARCH_ALPHA = 0.05
GARCH_HALF_LIFE_MINUTES = 240.0


def intraday_volatility(minute: np.ndarray) -> np.ndarray:
    """Volatility multiplier by minute of the (local) day, normalized to unit mean square."""
    m = minute.astype(np.float64)
    cash = (m >= 570) & (m < 960)  # 09:30 .. 16:00
    s = 0.45 + 0.15 * np.exp(-(((m - 180.0) / 60.0) ** 2))  # Europe open
    s = s + 0.6 * np.exp(-(((m - 510.0) / 12.0) ** 2))  # 08:30 economic releases
    u_shape = 0.35 + 1.3 * np.exp(-(m - 570.0) / 45.0) + 0.9 * np.exp(-(960.0 - m) / 35.0)
    s = np.where(cash, s + u_shape, s)
    return s / np.sqrt(np.mean(s**2))


def session_timestamps(days: int, bar_minutes: int, start: str) -> tuple[pd.DatetimeIndex, int]:
    """Bar start times of `days` sessions (Mon-Fri trading dates) and the bars per session."""
    dates = pd.bdate_range(start, periods=days)
    opens = dates - pd.Timedelta(minutes=24 * 60 - SESSION_OPEN_MINUTE)
    per_session = SESSION_MINUTES // bar_minutes
    offsets = np.arange(per_session, dtype=np.int64) * bar_minutes * 60_000_000_000
    naive = opens.as_unit("ns").asi8[:, None] + offsets[None, :]
    stamps = pd.DatetimeIndex(naive.ravel().astype("datetime64[ns]"))
    return stamps.tz_localize(TIMEZONE), per_session


def garch_variance(z: np.ndarray, *, alpha: float, beta: float) -> np.ndarray:
    """Unit-mean GARCH(1,1) variance path driven by shocks z (sequential by nature)."""
    omega = 1.0 - alpha - beta
    h = 1.0
    z2 = (z * z).tolist()
    values: list[float] = []
    append = values.append
    for shock2 in z2:
        append(h)
        h = omega + (alpha * shock2 + beta) * h
    return np.asarray(values)


def one_symbol(
    rng: np.random.Generator,
    *,
    days: int,
    per_session: int,
    minute: np.ndarray,
    bar_minutes: int,
    price: float,
    reopen_gap: float = 2.0,
    tick: float = TICK,
    daily_vol: float = DAILY_VOL,
    session_minutes: int = SESSION_MINUTES,
    volume_per_minute: float = 1500.0,
) -> dict[str, np.ndarray]:
    n = days * per_session
    sigma_bar = daily_vol * np.sqrt(bar_minutes / session_minutes)
    persistence = np.exp(-np.log(2.0) * bar_minutes / GARCH_HALF_LIFE_MINUTES)
    z = rng.standard_t(5, size=n) / np.sqrt(5.0 / 3.0)
    h = garch_variance(z, alpha=GARCH_ALPHA, beta=max(persistence - GARCH_ALPHA, 0.0))
    log_day = np.empty(days)
    x = 0.0
    for d, e in enumerate(rng.normal(0.0, 0.2, size=days)):
        x = 0.8 * x + e
        log_day[d] = x
    day_factor = np.repeat(np.exp(log_day - log_day.var() / 2.0), per_session)
    season = np.tile(intraday_volatility(minute), days)
    sigma = sigma_bar * season * day_factor * np.sqrt(h)
    returns = sigma * z
    returns[::per_session] += reopen_gap * sigma_bar * rng.standard_normal(days)  # reopen gaps
    close = np.maximum(np.round(price * np.exp(np.cumsum(returns)) / tick) * tick, tick)
    open_ = np.concatenate([[np.round(price / tick) * tick], close[:-1]])
    wick = np.abs(rng.normal(0.0, 0.6, size=(2, n))) * sigma * close
    high = np.maximum(open_, close) + np.ceil(wick[0] / tick) * tick
    low = np.maximum(np.minimum(open_, close) - np.ceil(wick[1] / tick) * tick, tick)
    volume_shape = season**1.8 * (day_factor * np.sqrt(h)) ** 0.8
    volume = volume_per_minute * bar_minutes * volume_shape * rng.lognormal(-0.08, 0.4, size=n)
    return {
        "open": open_,
        "high": high,
        "low": low,
        "close": close,
        "volume": np.round(volume).astype(np.int64),
    }


def generate_bars(
    *,
    days: int,
    seed: int,
    bar_minutes: int = 5,
    symbols: tuple[str, ...] = ("ES",),
    start: str = "2025-01-06",
    reopen_gap: float = 2.0,
) -> pd.DataFrame:
    """`days` trading sessions of OHLCV bars per symbol, deterministic given `seed`.

    Returns columns timestamp (tz-aware America/New_York), open, high, low, close, volume,
    symbol, sorted by symbol then time. Prices sit on a 0.25 tick; ES starts near 5000.
    `reopen_gap`: standard deviation of the extra move at each session's open, in bar
    volatilities (the real ES bars' daily reopenings are about 0.5 of today's 2).
    Instruments with their own sessions, ticks and volatilities: data/instruments.py.
    """
    if days < 1 or bar_minutes < 1 or bar_minutes > 60 or not symbols:
        raise ValueError(f"need days >= 1, 1 <= bar_minutes <= 60, symbols: {days=} {bar_minutes=}")
    stamps, per_session = session_timestamps(days, bar_minutes, start)
    minute = (SESSION_OPEN_MINUTE + np.arange(per_session) * bar_minutes) % (24 * 60)
    frames = []
    for i, symbol in enumerate(symbols):
        rng = np.random.default_rng([seed, i])
        price = BASE_PRICES.get(symbol, 100.0 * (i + 1))
        columns = one_symbol(
            rng,
            days=days,
            per_session=per_session,
            minute=minute,
            bar_minutes=bar_minutes,
            price=price,
            reopen_gap=reopen_gap,
        )
        frame = pd.DataFrame({"timestamp": stamps, **columns})
        frame["symbol"] = symbol
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
