"""Saved configs of earlier formats: one migration per format version, run on load
(foxhunt/migrations.py), and config fields that carry only today's defaults.

The saved runs of earlier formats in the suite load through it: tests/quant/legacy_qat_run
(format 0, forecasts compared in tests/quant/test_migrate.py), the checkpoint fixture
(tests/training/test_checkpoint_compat.py) and the one-field doors of
tests/cli/test_new_fields_doors.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest

from foxhunt.config_fields import setting
from foxhunt.data import DataConfig
from foxhunt.errors import ConfigError
from foxhunt.migrations import BEFORE_FORMATS, FORMAT, FORMAT_KEY, MIGRATIONS, migrated, sections_of
from foxhunt.model.config import TFTConfig
from foxhunt.training.config import TrainingConfig

OLD_RUN = Path(__file__).parent / "quant" / "legacy_qat_run" / "config.json"
CLASSES = {"data": DataConfig, "model": TFTConfig, "training": TrainingConfig}


def test_the_migrations_are_one_per_format_in_order() -> None:
    assert [m.to for m in MIGRATIONS] == list(range(1, FORMAT + 1))
    assert all(m.why for m in MIGRATIONS)


def test_a_format_0_file_gains_what_it_lacks_at_its_value_then_and_keeps_what_it_has() -> None:
    saved = json.loads(OLD_RUN.read_text())
    assert FORMAT_KEY not in saved  # written before formats were numbered
    now = migrated(saved)
    assert now[FORMAT_KEY] == FORMAT
    for section, values in BEFORE_FORMATS.items():
        for name, then in values.items():
            want = saved[section].get(name, then)  # a field the file has keeps its value
            assert now[section][name] == want, (section, name)
    assert "synthetic_market" not in saved["data"]  # one it lacks, and today's default differs
    assert now["data"]["synthetic_market"] == "garch" != DataConfig().synthetic_market
    assert migrated(now) == now  # today's format: nothing to do


def test_todays_file_is_read_as_written_and_a_newer_or_odd_format_is_refused() -> None:
    today = {FORMAT_KEY: FORMAT, "data": {}, "model": {}, "training": {}}
    assert sections_of(today) == {"data": {}, "model": {}, "training": {}}  # nothing filled
    with pytest.raises(ConfigError, match=r"newer than this foxhunt reads.*upgrade foxhunt"):
        migrated({FORMAT_KEY: FORMAT + 1})
    for odd in (-1, "1", 1.0, True, None):
        with pytest.raises(ConfigError, match="must be a format number"):
            migrated({FORMAT_KEY: odd})


def test_each_field_a_migration_fills_is_a_field_today() -> None:
    """A renamed or removed field needs a migration of its own, not a stale fill."""
    for section, values in BEFORE_FORMATS.items():
        known = {f.name for f in dataclasses.fields(CLASSES[section])}
        assert set(values) <= known, sorted(set(values) - known)


def test_fields_carry_no_values_of_earlier_formats() -> None:
    assert "legacy" not in inspect.signature(setting).parameters
    for cls in CLASSES.values():
        for f in dataclasses.fields(cls):
            assert set(f.metadata) <= {"range", "positional", "bare"}, (cls.__name__, f.name)


def test_a_run_saved_today_records_its_format_and_reads_back(tmp_path: Path) -> None:
    from foxhunt.runs import RunConfig
    from foxhunt.runs.checks import read_preprocessor
    from foxhunt.runs.store import read_run_config, save_run_config

    old = RunConfig.from_dict(json.loads(OLD_RUN.read_text()))  # format 0, migrated
    assert old.data.synthetic_market == "garch" and old.model.log_scale is False
    save_run_config(tmp_path, old, read_preprocessor(OLD_RUN.parent / "preprocessor.json"))
    written = json.loads((tmp_path / "config.json").read_text())
    assert written[FORMAT_KEY] == FORMAT
    assert read_run_config(tmp_path) == old
