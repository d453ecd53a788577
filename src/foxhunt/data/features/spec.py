"""FeatureSpec: which inputs a run feeds, in order, and the state fitted for them.

Today's inputs (base.py) always come first; the library's groups (registry.py) follow, then
the user's columns. A spec with no groups is exactly the inputs of runs saved before the
library, and its JSON is theirs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from foxhunt.data.calendar import SESSION_FEATURES, Calendar
from foxhunt.data.calendar_setting import calendar_from_json, calendar_to_json
from foxhunt.data.features.base import BASE_OBSERVED, CALENDAR
from foxhunt.data.features.group import Column, Group
from foxhunt.data.features.instrument import NAMES as INSTRUMENT
from foxhunt.data.features.registry import GROUPS, GroupSetting, group_text, parse_groups


@dataclass(frozen=True)
class FeatureSpec:
    """Which inputs exist, in the order they are fed to the model."""

    volatility_windows: tuple[int, ...] = (12, 48)
    observed_columns: tuple[str, ...] = ()
    known_columns: tuple[str, ...] = ()
    #: exchange calendar of the session features: one name, one per symbol, or None = none
    calendar: Calendar = None
    #: the library's groups with their windows (registry.py); () = today's inputs only
    groups: tuple[GroupSetting, ...] = ()
    #: fitted on the training bars: a step over it starts a session (None: see bars.py)
    session_gap_ns: int | None = None
    #: fitted on the training rows: each symbol's typical log(1 + volume) by minute of day
    volume_profile: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: group inputs constant on the training rows, left out (a warning named each)
    dropped: tuple[str, ...] = ()
    #: fitted on the training rows: each symbol's static descriptors (group "instrument")
    instrument: tuple[tuple[str, tuple[float, ...]], ...] = ()
    #: the contract column the groups that read one take it from (group "expiry"); None: none
    contract_column: str | None = None

    @property
    def reads_contracts(self) -> bool:
        """A chosen group reads the contract column."""
        return any(GROUPS[name].contract for name, _ in self.groups)

    def _groups(self, known: bool) -> list[tuple[Group, tuple[int, ...]]]:
        chosen = [(GROUPS[name], windows) for name, windows in self.groups]
        return [(g, w) for g, w in chosen if g.known == known and not g.static]

    @property
    def static_names(self) -> tuple[str, ...]:
        """The static real inputs (besides the symbol): the "instrument" group's."""
        return tuple(n for name, _ in self.groups if GROUPS[name].static for n in INSTRUMENT)

    @property
    def observed_groups(self) -> list[tuple[Group, tuple[int, ...]]]:
        return self._groups(known=False)

    @property
    def known_groups(self) -> list[tuple[Group, tuple[int, ...]]]:
        return self._groups(known=True)

    def group_columns(self, known: bool) -> list[Column]:
        """The groups' inputs that are fed (not dropped), in order."""
        groups = self.known_groups if known else self.observed_groups
        return [c for g, w in groups for c in g.columns(w) if c.name not in self.dropped]

    @property
    def observed_names(self) -> tuple[str, ...]:
        vol = tuple(f"realized_vol_{w}" for w in self.volatility_windows)
        library = tuple(c.name for c in self.group_columns(known=False))
        return (*BASE_OBSERVED, *vol, *library, *self.observed_columns)

    @property
    def known_names(self) -> tuple[str, ...]:
        session = SESSION_FEATURES if self.calendar is not None else ()
        library = tuple(c.name for c in self.group_columns(known=True))
        return (*CALENDAR, *session, *library, *self.known_columns)

    @property
    def user_columns(self) -> tuple[str, ...]:
        return (*self.observed_columns, *self.known_columns)

    def columns(self) -> list[Column]:
        """Every input, observed then known, with its group, window and warm-up."""
        base = [Column("log_return", "base", None, "1 bars")]
        base += [Column(n, "base", None, "0 bars") for n in BASE_OBSERVED[1:]]
        vol = [
            Column(f"realized_vol_{w}", "realized_vol", w, f"{w} bars")
            for w in self.volatility_windows
        ]
        user = [Column(n, "observed_columns", None, "as given") for n in self.observed_columns]
        clock = [Column(n, "clock", None, "0 bars") for n in CALENDAR]
        session = SESSION_FEATURES if self.calendar is not None else ()
        known = [Column(n, "session", None, "0 bars") for n in session]
        known_user = [Column(n, "known_columns", None, "as given") for n in self.known_columns]
        observed = [*base, *vol, *self.group_columns(known=False), *user]
        static = [Column(n, "instrument", None, "fitted on train") for n in self.static_names]
        return [*static, *observed, *clock, *known, *self.group_columns(known=True), *known_user]

    @property
    def warmup_bars(self) -> int:
        """The longest warm-up in bars (a session-long one counts as none here)."""
        bars = [int(c.warmup.split()[0]) for c in self.columns() if c.warmup.endswith(" bars")]
        return max(bars, default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "volatility_windows": list(self.volatility_windows),
            "observed_columns": list(self.observed_columns),
            "known_columns": list(self.known_columns),
            "calendar": calendar_to_json(self.calendar),
            "groups": [group_text(g) for g in self.groups],
            "session_gap_ns": self.session_gap_ns,
            "volume_profile": {s: list(v) for s, v in self.volume_profile},
            "dropped": list(self.dropped),
            "instrument": {s: list(v) for s, v in self.instrument},
            "contract_column": self.contract_column,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSpec:
        """preprocessor.json's spec, of today's version (foxhunt/migrations.py)."""
        gap = data["session_gap_ns"]
        return cls(
            volatility_windows=tuple(int(w) for w in data["volatility_windows"]),
            observed_columns=tuple(data["observed_columns"]),
            known_columns=tuple(data["known_columns"]),
            calendar=calendar_from_json(data["calendar"], "preprocessor spec.calendar"),
            groups=parse_groups(data["groups"]),
            session_gap_ns=None if gap is None else int(gap),
            volume_profile=tuple(
                (str(s), tuple(float(x) for x in v)) for s, v in data["volume_profile"].items()
            ),
            dropped=tuple(str(n) for n in data["dropped"]),
            instrument=tuple(
                (str(s), tuple(float(x) for x in v)) for s, v in data["instrument"].items()
            ),
            contract_column=data["contract_column"],
        )
