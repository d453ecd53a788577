"""Saved files of earlier formats brought to today's: one migration per format version.

Each JSON file of a run folder that foxhunt reads back (config.json and a checkpoint's copy
of it, preprocessor.json, baseline.json, qat.json) records the format it was written in
(``SavedFormat.key``); a file without one is of the format before numbers (0; preprocessor.json
numbered its versions from 1 and always records one). Loading runs every migration from the
file's format on, in order (``SavedFormat.migrated``), so the loaders see only today's fields
and the dataclasses carry only today's defaults: a field added to a saved file is a new format
whose migration gives older files the value they were made with (never today's default,
which may differ), and a field renamed or re-valued is one too. A file of a newer format
than this foxhunt knows is refused (ConfigError; the loader names the file).
``tests/test_migrations.py`` loads saved files of every format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from foxhunt.errors import ConfigError

#: the key of config.json (and of a checkpoint's config) that records its format
FORMAT_KEY = "format"


@dataclass(frozen=True)
class Migration:
    """A saved config of format ``to - 1`` -> one of format ``to``: ``why`` says what changed."""

    to: int
    why: str
    apply: Callable[[dict[str, Any]], dict[str, Any]]


def filled(
    values_then: Mapping[str, Mapping[str, Any]],
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A migration that gives each section the fields it lacks, as the value runs had before
    the field existed (as JSON holds it). A section the file lacks stays absent."""

    def apply(saved: dict[str, Any]) -> dict[str, Any]:
        out = dict(saved)
        for section, values in values_then.items():
            if isinstance(out.get(section), Mapping):
                out[section] = {**values, **out[section]}
        return out

    return apply


#: every field added to config.json before formats were numbered, with the value the runs
#: saved without it were made with (a file of format 0 may have been written after some of
#: them existed: a field it has keeps its value)
BEFORE_FORMATS: dict[str, dict[str, Any]] = {
    "data": {
        "contract_column": None,  # contract columns were ignored
        "calendar": "none",
        "cross_breaks": False,
        "feature_groups": [],
        "fast_window": 0,
        "base": "realized_vol",
        "feature_store": None,
        "feature_store_dtype": "float32",
        "synthetic_market": "garch",
    },
    "model": {
        "output": "direct",
        "learn_spread": False,
        "vol_signals": 0,
        "log_scale": False,
        "sort_quantiles": False,
    },
    "training": {
        "validate_initial": False,
        "calibrate": False,
        "initial_confidence": 0.0,
        "lr_schedule": "constant",
        "warmup_steps": None,
        "warmup_fraction": 0.05,
        "min_lr": 0.0,
        "threads": 0,  # 0: auto, what runs saved before the default was load-free
        "range_weight": 0.0,  # the pinball loss alone
    },
}

#: in order: ``MIGRATIONS[n]`` takes format n to n + 1
MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "fields added before formats were numbered read as their value then",
              filled(BEFORE_FORMATS)),
    Migration(2, "data.prepare_workers: feature stores were prepared in one process",
              filled({"data": {"prepare_workers": 1}})),
    Migration(3, "training.head_fallback: the kept model was served, whatever the other bases",
              filled({"training": {"head_fallback": False}})),
)  # fmt: skip


@dataclass(frozen=True)
class SavedFormat:
    """The formats of one saved file: ``migrations[n]`` takes format ``first + n`` to the next."""

    file: str
    migrations: tuple[Migration, ...]
    key: str = FORMAT_KEY
    first: int = 0  # the oldest format
    unnumbered: bool = True  # a file without ``key`` is of format ``first`` (else refused)

    @property
    def current(self) -> int:
        """The format the file is written in today."""
        return self.first + len(self.migrations)

    def saved_format(self, saved: Mapping[str, Any]) -> int:
        """The format ``saved`` records; ConfigError for one no foxhunt wrote or a newer one."""
        found = saved.get(self.key, self.first if self.unnumbered else None)
        known = f"{self.first} to {self.current}"
        if isinstance(found, bool) or not isinstance(found, int) or found < self.first:
            raise ConfigError(f"{self.key} must be a format number ({known}), got {found!r}")
        if found > self.current:
            raise ConfigError(
                f"{self.key} {found} is newer than this foxhunt reads ({self.current}); "
                "upgrade foxhunt"
            )
        return found

    def migrated(self, saved: Mapping[str, Any]) -> dict[str, Any]:
        """``saved`` in today's format: each migration from its format on, in order, and its
        format key set to today's."""
        out = dict(saved)
        for migration in self.migrations[self.saved_format(saved) - self.first :]:
            out = migration.apply(out)
        out[self.key] = self.current
        return out

    def fields_of(self, saved: Mapping[str, Any]) -> dict[str, Any]:
        """``saved`` migrated, without the format it records: today's fields only."""
        out = self.migrated(saved)
        del out[self.key]
        return out


def with_fields(values_then: Mapping[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A migration that gives the file the top-level fields it lacks, as their value then."""

    def apply(saved: dict[str, Any]) -> dict[str, Any]:
        return {**values_then, **saved}

    return apply


def unchanged(saved: dict[str, Any]) -> dict[str, Any]:
    """A format that only widened what a field may hold: older files read as they are."""
    return saved


CONFIG = SavedFormat("config.json", MIGRATIONS)
#: the format config.json is written in today
FORMAT = CONFIG.current


def saved_format(saved: Mapping[str, Any]) -> int:
    """The format a saved config records (0 without one); ConfigError for one that no
    foxhunt wrote or a newer one wrote."""
    return CONFIG.saved_format(saved)


def migrated(saved: Mapping[str, Any]) -> dict[str, Any]:
    """``saved`` (config.json's object, or its sections) in today's format."""
    return CONFIG.migrated(saved)


def sections_of(saved: Mapping[str, Any]) -> dict[str, Any]:
    """``saved`` migrated, without the format it records: the config's sections as today's
    dataclasses read them."""
    return CONFIG.fields_of(saved)


#: the feature library's spec fields, as a spec without groups (every run before it) has them
SPEC_BEFORE_GROUPS: dict[str, Any] = {
    "groups": [],
    "session_gap_ns": None,
    "volume_profile": {},
    "dropped": [],
    "instrument": {},
    "contract_column": None,
}
#: preprocessor.json's fields added without a new version, as files without them were made
PREPROCESSOR_THEN: dict[str, Any] = {
    "baseline_window": 64,
    "fast_window": 0,  # no fast volatility
    "contract_column": None,  # contract columns were ignored
    "roll_adjust": None,
    "cross_breaks": False,
}


def _preprocessor_fields_then(saved: dict[str, Any]) -> dict[str, Any]:
    return with_fields(PREPROCESSOR_THEN)(filled({"spec": SPEC_BEFORE_GROUPS})(saved))


#: preprocessor.json (data/preprocess.py): numbered from version 1, the key "version"
PREPROCESSOR = SavedFormat(
    "preprocessor.json",
    (
        Migration(2, "version 1 fitted no intraday profile: no baseline scale",
                  with_fields({"profile": None})),
        Migration(3, "version 2 had no calendars: none",
                  filled({"spec": {"calendar": None}})),
        Migration(4, "version 4 may name one calendar per symbol; a version 3 name still reads",
                  unchanged),
        Migration(5, "version 4 had no base: the rolling one",
                  with_fields({"base": "realized_vol"})),
        Migration(6, "fields added within versions 1-5 (fast volatility, contracts, the "
                  "feature library's spec) read as their value then", _preprocessor_fields_then),
    ),
    key="version",
    first=1,
    unnumbered=False,
)  # fmt: skip

#: the fits a baseline.json's volatility state lacked before the extended baselines
EXTENDED_FITS = ("ewma", "har", "har_range", "quantreg", "residuals")


def _volatility_then(saved: dict[str, Any]) -> dict[str, Any]:
    volatility = saved.get("volatility")
    if isinstance(volatility, Mapping):
        extended = "ewma" in volatility  # written with the extended baselines
        empty: dict[str, Any] = {key: {} for key in EXTENDED_FITS}
        volatility = {**empty, **volatility, "extended": extended}
    return {**saved, "volatility": volatility}


#: baseline.json (scoring/baselines.py, baselines/fitted.py)
BASELINE = SavedFormat(
    "baseline.json",
    (Migration(1, "volatility null where none were fitted; one of rolling vol and GARCH-t "
                  "alone: extended false, the other fits empty", _volatility_then),),
)  # fmt: skip


def _lstm_then(saved: dict[str, Any]) -> dict[str, Any]:
    return {**saved, "lstm": "int8-weights"} if saved.get("lstm") == "dynamic" else saved


#: qat.json (quant/config.py's QATConfig)
QAT = SavedFormat(
    "qat.json",
    (Migration(1, "lstm \"dynamic\" (torch.ao's int8 LSTM, gone with it) reads as "
                  "\"int8-weights\": its weights were int8 per gate unit", _lstm_then),),
)  # fmt: skip
