"""This session's two fields through every door that sets them: the flag, a YAML config, the
Python API and a saved config.json (a run saved before the field reads its legacy value)."""

from __future__ import annotations

from pathlib import Path

import pytest

from foxhunt.cli.resolve import resolve
from foxhunt.cli.train_config import run_config, train_command
from foxhunt.data import DataConfig
from foxhunt.migrations import sections_of
from foxhunt.training.config import TrainingConfig

CASES = [  # (section, field, flag value, YAML value, API value, legacy value)
    ("data", "base", "ewma", "ewma", "ewma", "realized_vol"),
    ("training", "threads", "3", "3", 3, 0),
    ("data", "prepare_workers", "2", "2", 2, 1),
]
CLASSES = {"data": DataConfig, "training": TrainingConfig}


@pytest.mark.parametrize(("section", "name", "flag", "yaml", "api", "legacy"), CASES)
def test_a_new_field_through_flag_yaml_api_and_config_json(
    tmp_path: Path, section: str, name: str, flag: str, yaml: str, api: object, legacy: object
) -> None:
    by_flag = run_config(resolve(train_command(), [f"--{name.replace('_', '-')}", flag])[1])
    path = tmp_path / "c.yaml"
    path.write_text(f"{section}:\n  {name}: {yaml}\n")
    by_yaml = run_config(resolve(train_command(), ["--config", str(path)])[1])
    cls = CLASSES[section]
    by_api = cls(**{name: api})
    got = [getattr(getattr(c, section), name) for c in (by_flag, by_yaml)]
    assert got == [getattr(by_api, name)] * 2 == [api] * 2
    saved = by_api.to_dict()
    assert cls.from_dict(saved) == by_api
    saved.pop(name)  # config.json of a run saved before the field: migrated on load
    assert getattr(cls.from_dict(sections_of({section: saved})[section]), name) == legacy
