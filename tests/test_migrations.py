"""Saved files of earlier formats (config.json, preprocessor.json, baseline.json, qat.json):
one migration per format version, run on load (foxhunt/migrations.py); config fields that
carry only today's defaults; and a file of a newer format refused, named.

The saved runs of earlier formats in the suite load through it: tests/quant/legacy_qat_run
(format 0, forecasts compared in tests/quant/test_migrate.py), the checkpoint fixture
(tests/training/test_checkpoint_compat.py) and the one-field doors of
tests/cli/test_new_fields_doors.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from foxhunt.baselines import FittedBaselines
from foxhunt.config_fields import setting
from foxhunt.data import DataConfig, Preprocessor
from foxhunt.errors import ConfigError
from foxhunt.migrations import (
    BASELINE,
    BEFORE_FORMATS,
    CONFIG,
    EXTENDED_FITS,
    FORMAT,
    FORMAT_KEY,
    PREPROCESSOR,
    QAT,
    SavedFormat,
    migrated,
    sections_of,
)
from foxhunt.model.config import TFTConfig
from foxhunt.quant.config import QATConfig
from foxhunt.training.config import TrainingConfig

OLD_RUN = Path(__file__).parent / "quant" / "legacy_qat_run" / "config.json"
CLASSES = {"data": DataConfig, "model": TFTConfig, "training": TrainingConfig}


@pytest.mark.parametrize("saved", [CONFIG, PREPROCESSOR, BASELINE, QAT], ids=lambda s: s.file)
def test_the_migrations_are_one_per_format_in_order(saved: SavedFormat) -> None:
    assert [m.to for m in saved.migrations] == list(range(saved.first + 1, saved.current + 1))
    assert all(m.why for m in saved.migrations)


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


def _old_preprocessor(version: int) -> dict[str, Any]:
    """The fixture's preprocessor.json (version 4) as a file of ``version`` held it."""
    saved = json.loads((OLD_RUN.parent / "preprocessor.json").read_text())
    assert saved["version"] == 4 and "base" not in saved  # a rolling-base file as written
    if version <= 2:
        del saved["cross_breaks"], saved["spec"]["calendar"]
    if version == 1:
        del saved["profile"]
    if version == 5:
        saved["base"] = "realized_vol"  # version 5 named its base
    return {**saved, "version": version}


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
def test_a_preprocessor_json_of_each_version_migrates_to_todays_fields(version: int) -> None:
    old = _old_preprocessor(version)
    now = PREPROCESSOR.migrated(old)
    assert now["version"] == PREPROCESSOR.current == Preprocessor.VERSION
    loaded = Preprocessor.from_state_dict(old)
    assert now == loaded.state_dict()  # exactly today's fields, nothing else
    assert loaded.base == "realized_vol" and loaded.fast_window == old.get("fast_window", 0)
    assert (loaded.profile is None) == (version == 1)
    assert loaded.spec.calendar is (None if version <= 2 else loaded.spec.calendar)
    assert PREPROCESSOR.migrated(now) == now


def test_a_baseline_json_of_format_0_migrates_to_todays_fields() -> None:
    historical = [[-1.0, 1.0]]
    before_volatility = BASELINE.fields_of({"historical_quantiles": historical})
    assert before_volatility == {"historical_quantiles": historical, "volatility": None}
    first = {"window": 64, "profiles": {}, "garch_t": {"0": {"error": "too few"}}}
    now = BASELINE.migrated({"historical_quantiles": historical, "volatility": first})
    assert now[FORMAT_KEY] == BASELINE.current
    state = now["volatility"]
    assert state == FittedBaselines.from_state_dict(state).state_dict()  # today's fields
    assert state["extended"] is False and all(state[k] == {} for k in EXTENDED_FITS)
    assert FittedBaselines.from_state_dict(state).names == ("realized_vol", "garch_t")


def test_a_qat_json_of_format_0_migrates_to_todays_fields() -> None:
    saved = json.loads((OLD_RUN.parent / "qat.json").read_text())
    assert FORMAT_KEY not in saved
    assert QATConfig.from_dict(QAT.fields_of(saved)) == QATConfig(**saved)
    torch_ao = QAT.fields_of({**saved, "lstm": "dynamic"})
    assert QATConfig.from_dict(torch_ao).lstm == "int8-weights"
    with pytest.raises(ConfigError, match="lstm"):
        QATConfig.from_dict({**saved, "lstm": "dynamic"})  # today's loader knows no old value


def test_every_saved_file_is_written_in_todays_format(tmp_path: Path) -> None:
    from foxhunt.runs import save_baseline_state, save_qat_state

    save_qat_state(tmp_path, QATConfig().to_dict())
    save_baseline_state(tmp_path, {"historical_quantiles": [[0.0]], "volatility": None})
    assert json.loads((tmp_path / "qat.json").read_text())[FORMAT_KEY] == QAT.current
    assert json.loads((tmp_path / "baseline.json").read_text())[FORMAT_KEY] == BASELINE.current


@pytest.mark.parametrize(
    ("name", "key", "newer"),
    [
        ("config.json", FORMAT_KEY, FORMAT + 1),
        ("preprocessor.json", "version", PREPROCESSOR.current + 1),
        ("qat.json", FORMAT_KEY, QAT.current + 1),
    ],
)
def test_a_file_of_a_newer_format_exits_2_naming_it(
    name: str, key: str, newer: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from foxhunt.cli import main
    from foxhunt.data import generate_bars

    run, bars = tmp_path / "run", tmp_path / "bars.parquet"
    shutil.copytree(OLD_RUN.parent, run)
    generate_bars(days=8, seed=1).to_parquet(bars)
    saved = json.loads((run / name).read_text())
    (run / name).write_text(json.dumps({**saved, key: newer}))
    capsys.readouterr()
    assert main(["predict", str(run), "--parquet-file", str(bars)]) == 2
    err = capsys.readouterr().err
    assert f"{run / name}: {key} {newer} is newer than this foxhunt reads" in err, err
    assert "Traceback" not in err


def test_a_baseline_json_of_a_newer_format_is_refused_naming_it(tmp_path: Path) -> None:
    from foxhunt.runs import RunFileError, read_baseline_state

    path = tmp_path / "baseline.json"
    newer = BASELINE.current + 1
    path.write_text(json.dumps({FORMAT_KEY: newer, "historical_quantiles": [[0.0]]}))
    with pytest.raises(RunFileError, match=rf"{path}: format {newer} is newer than"):
        read_baseline_state(path, horizon=1, quantiles=1)
