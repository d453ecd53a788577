"""The feature library's groups by name, and DataConfig.feature_groups entries parsed into
(group, windows) settings: "realized" (its default windows) or "realized:12/78/276"."""

from __future__ import annotations

from collections.abc import Sequence

from foxhunt.data.features.activity import GROUP as ACTIVITY
from foxhunt.data.features.clock import CYCLES
from foxhunt.data.features.cross import GROUP as CROSS
from foxhunt.data.features.expiry import GROUP as EXPIRY
from foxhunt.data.features.group import Group
from foxhunt.data.features.instrument import GROUP as INSTRUMENT
from foxhunt.data.features.location import GROUP as LOCATION
from foxhunt.data.features.ranges import GROUP as RANGES
from foxhunt.data.features.realized import GROUP as REALIZED
from foxhunt.data.features.returns import GROUP as RETURNS
from foxhunt.data.features.shape import GROUP as SHAPE
from foxhunt.data.features.trend import GROUP as TREND
from foxhunt.errors import ConfigError

#: every group, in the order their columns are fed (observed groups, then known ones)
GROUPS: dict[str, Group] = {
    g.name: g
    for g in (
        RETURNS,
        REALIZED,
        RANGES,
        ACTIVITY,
        LOCATION,
        TREND,
        SHAPE,
        CROSS,
        CYCLES,
        EXPIRY,
        INSTRUMENT,
    )
}
#: a (group name, windows) setting of a FeatureSpec
GroupSetting = tuple[str, tuple[int, ...]]
MAX_WINDOW = 100_000


def _fail(entries: object, fix: str) -> ConfigError:
    return ConfigError(f"DataConfig.feature_groups={entries!r}: {fix}")


def parse_group(entry: str, entries: object = None) -> GroupSetting:
    """ "name" -> (name, its default windows); "name:3/12/48" -> (name, (3, 12, 48))."""
    shown = entry if entries is None else entries
    if not isinstance(entry, str):
        raise _fail(shown, f"{entry!r} is not text such as 'realized' or 'realized:12/78'")
    name, colon, text = entry.strip().partition(":")
    if name.isdigit():  # the list was split at a comma between windows
        raise _fail(shown, f"{name!r} is no group: separate windows with '/' (realized:12/48)")
    if name not in GROUPS:
        raise _fail(shown, f"unknown feature group {name!r}; use one of {list(GROUPS)}")
    group = GROUPS[name]
    if not colon:
        return name, group.windows
    if not group.windows:
        raise _fail(shown, f"group {name!r} takes no windows; write just {name!r}")
    try:
        windows = tuple(int(w) for w in text.replace(",", "/").split("/"))
    except ValueError:
        raise _fail(shown, f"windows of {name!r} must be integers such as {name}:12/48") from None
    low = group.min_window
    if any(not low <= w <= MAX_WINDOW for w in windows) or len(set(windows)) != len(windows):
        raise _fail(
            shown, f"windows of {name!r} must be distinct integers in [{low}, {MAX_WINDOW}]"
        )
    return name, windows


def parse_groups(entries: Sequence[str]) -> tuple[GroupSetting, ...]:
    """Every entry parsed; a group named twice is refused."""
    settings = tuple(parse_group(e, tuple(entries)) for e in entries)
    names = [name for name, _ in settings]
    if len(set(names)) != len(names):
        raise _fail(tuple(entries), "name each group once")
    return settings


def group_text(setting: GroupSetting) -> str:
    """The entry that parses back to `setting`."""
    name, windows = setting
    return f"{name}:{'/'.join(map(str, windows))}" if windows else name
