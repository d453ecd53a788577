"""The model's inputs: today's default set (base.py, clock.py) and the feature library's
groups (registry.py), chosen by DataConfig.feature_groups and computed per series."""

from foxhunt.data.features.base import (
    BASE_OBSERVED,
    CALENDAR,
    TARGET_NAME,
    Features,
    series_starts,
)
from foxhunt.data.features.clock import calendar_features
from foxhunt.data.features.compute import compute_features
from foxhunt.data.features.group import Column, Group
from foxhunt.data.features.known import known_calendar
from foxhunt.data.features.registry import GROUPS, parse_groups
from foxhunt.data.features.spec import FeatureSpec

__all__ = [
    "BASE_OBSERVED",
    "CALENDAR",
    "GROUPS",
    "TARGET_NAME",
    "Column",
    "FeatureSpec",
    "Features",
    "Group",
    "calendar_features",
    "compute_features",
    "known_calendar",
    "parse_groups",
    "series_starts",
]
