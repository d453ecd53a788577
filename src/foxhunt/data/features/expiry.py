"""Group "expiry" (known in advance: expiry dates are published when a contract is listed):

    minutes_to_expiry  minutes from the bar to its contract's expiry (negative after it)

read from the contract column, so it needs one (DataConfig.contract_column). A contract is
named by a futures code, ROOT + month letter (F G H J K M N Q U V X Z) + year (ESH6, ESH26,
ESH2026; a one-digit year is the one within [bar's year - 2, + 7]), whose expiry is taken as
the third Friday of the contract month, the last trading day of the CME equity index and
currency futures (other products expire on other days: for them it is a proxy of the roll
date, a few days out); or by a date (2026-03-20 or 20260320), the expiry itself. Either is
09:30 New York time on that day (the equity index futures' final settlement at the open). A
forecast bar's contract is its anchor's.
"""

from __future__ import annotations

import datetime as dt
import logging
import re

import numpy as np
import pandas as pd

from foxhunt.data.features.group import Column, Group, KnownRows
from foxhunt.errors import ConfigError, DataError

MONTHS = "FGHJKMNQUVXZ"
_CODE = re.compile(rf"^[A-Z0-9]*?([{MONTHS}])(\d{{4}}|\d{{1,2}})$")
_DATE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})")
EXPIRY_ZONE = "America/New_York"
EXPIRY_MINUTE = 9 * 60 + 30
#: a contract whose first bar comes this long after its expiry is warned about: its name or
#: year is likely wrong (the third Friday is a few days off the real expiry of some products,
#: never a month)
STALE_NS = 31 * 86_400 * 10**9

log = logging.getLogger("foxhunt.data")


def contract_month(name: object) -> tuple[int, int, int | None]:
    """(month, year digits given, day or None) of a contract name; DataError if it names
    neither a futures code nor a date."""
    name = str(name)
    text = name.strip().upper()
    if date := _DATE.match(text):
        year, month, day = (int(x) for x in date.groups())
        try:  # 2026-13-01 was an internal error, 2026-02-30 silently March 2 (issue 42)
            dt.date(year, month, day)
        except ValueError as exc:
            raise DataError(
                f"contract {name!r}: not a date ({exc}); name contracts by a futures code "
                "(ESH6) or a real expiry date (2026-03-20)"
            ) from None
        return month, year, day
    if code := _CODE.match(text):
        return MONTHS.index(code.group(1)) + 1, int(code.group(2)), None
    raise DataError(
        f"contract {name!r}: no expiry in it; group 'expiry' needs contract codes such as "
        "ESH6 / ESH26 or expiry dates such as 2026-03-20 in the contract column"
    )


def _year(digits: int, bar_years: np.ndarray) -> np.ndarray:
    """The full year a contract's year digits name, near each bar's year."""
    if digits >= 1000:
        return np.full(len(bar_years), digits)
    if digits >= 10:
        return np.full(len(bar_years), 2000 + digits)
    low = bar_years - 2
    return low + (digits - low) % 10


def expiry_ns(month: int, years: np.ndarray, day: int | None) -> np.ndarray:
    """[n] UTC ns of the expiry in `month` of each of `years` (day None: its third Friday)."""
    first = pd.to_datetime(pd.DataFrame({"year": years, "month": month, "day": 1}))
    friday = 1 + (4 - first.dt.day_of_week.to_numpy()) % 7 + 14
    days = np.full(len(years), day) if day is not None else friday
    local = first + pd.to_timedelta(days - 1, unit="D") + pd.Timedelta(minutes=EXPIRY_MINUTE)
    zoned = pd.DatetimeIndex(local).tz_localize(EXPIRY_ZONE)
    return np.asarray(zoned.as_unit("ns").asi8)


def minutes_to_expiry(times_ns: np.ndarray, contracts: np.ndarray) -> np.ndarray:
    """[N] minutes from each UTC ns time to its contract's expiry."""
    codes, names = pd.factorize(np.asarray(contracts, dtype=str))
    bar_years = pd.DatetimeIndex(times_ns).year.to_numpy()
    out = np.empty(len(times_ns))
    for code, name in enumerate(names):
        rows = codes == code
        month, digits, day = contract_month(name)
        years = _year(digits, bar_years[rows])
        pairs, inverse = np.unique(years, return_inverse=True)  # a few years, not N rows
        out[rows] = (expiry_ns(month, pairs, day)[inverse] - times_ns[rows]) / 60e9
    return out


def check_contracts(
    contracts: np.ndarray, times_ns: np.ndarray, *, column: str, source: str
) -> None:
    """Every contract name of the `column` holds an expiry (DataError naming the file, the
    column and the first bad value, in row order); one warning for contracts whose bars all
    come over a month after their expiry."""
    codes, names = pd.factorize(np.asarray(contracts, dtype=str))  # in order of appearance
    stale: list[str] = []
    for code, name in enumerate(names):
        try:
            month, digits, day = contract_month(name)
        except DataError as exc:
            raise DataError(f"{source}: column {column!r}: {exc}") from None
        first = int(times_ns[codes == code].min())
        bar_year = np.asarray([pd.Timestamp(first).year])
        expiry = int(expiry_ns(month, _year(digits, bar_year), day)[0])
        if first - expiry > STALE_NS:
            when = pd.Timestamp(expiry, tz="UTC").tz_convert(EXPIRY_ZONE)
            days = (first - expiry) // (86_400 * 10**9)
            stale.append(f"{str(name)!r} expired {when:%Y-%m-%d}, {days} days before its first bar")
    if stale:
        log.warning(
            "%s: column %r: %d contract(s) expired long before their bars (%s%s); group "
            "'expiry' reads them as minutes since an old expiry: check the names or years",
            source,
            column,
            len(stale),
            stale[0],
            ", ..." if len(stale) > 1 else "",
        )


def compute(rows: KnownRows, windows: tuple[int, ...]) -> np.ndarray:
    if rows.contracts is None:
        raise ConfigError(
            "DataConfig.feature_groups: group 'expiry' reads the contract column and the "
            "bars have none; add a contract column (contract, expiry or --contract-column)"
        )
    return minutes_to_expiry(rows.local.as_unit("ns").asi8, rows.contracts)[:, None]


GROUP = Group(
    name="expiry",
    summary="minutes to the contract's expiry (known in advance; needs a contract column)",
    windows=(),
    columns=lambda w: [Column("minutes_to_expiry", "expiry", None, "0 bars")],
    compute=compute,
    known=True,
    contract=True,
)
