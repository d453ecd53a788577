"""The search space and the base config from YAML: parsed, typed, and refused with one line
naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from foxhunt.cli import main
from foxhunt.cli.resolve import resolve
from foxhunt.cli.train_config import run_config
from foxhunt.cli.tune import tune_command
from foxhunt.errors import ConfigError, UsageError
from foxhunt.runs import RunConfig
from foxhunt.tune import apply, parse_space, read_space
from helpers import TINY_CLI, tiny_run

BASE = tiny_run()


def base_config(path: Path) -> RunConfig:
    """The base config of ``foxhunt tune --config PATH``, read as the command reads it."""
    return run_config(resolve(tune_command(), ["--config", str(path)])[1])


def test_ranges_and_choices_take_their_fields_types(tmp_path: Path) -> None:
    path = tmp_path / "space.yaml"
    path.write_text(
        "training.lr: {low: 1e-4, high: 1e-2, log: true}\n"  # YAML 1.1 reads 1e-4 as text
        "model.hidden_size: {choices: [8, 16]}\n"
        "model.dropout: {low: 0, high: 0.3}\n"
        "data.lookback: {low: 16, high: 32, step: 8}\n"
        "training.loss_weighting: {choices: [none, inverse_scale]}\n"
    )
    space = {p.name: p for p in read_space(path, BASE)}
    assert space["training.lr"].kind == "float" and space["training.lr"].low == 1e-4
    assert space["training.lr"].log
    assert space["model.hidden_size"].choices == (8, 16)
    assert space["model.dropout"].kind == "float"
    assert (space["data.lookback"].kind, space["data.lookback"].step) == ("int", 8)
    changed = apply(BASE, {"data.lookback": 24, "training.lr": 3e-3, "model.hidden_size": 8})
    assert changed.data.lookback == 24 and changed.model.lookback is None  # the job fills it
    assert (changed.training.lr, changed.model.hidden_size) == (3e-3, 8)


@pytest.mark.parametrize(
    ("space", "named"),
    [
        ({"model.hiden_size": {"choices": [8]}}, "model.hiden_size"),
        ({"optimizer.lr": {"low": 1, "high": 2}}, "optimizer.lr"),
        ({"training.lr": {"low": 1e-2, "high": 1e-4}}, "training.lr"),
        ({"training.lr": {"low": 0.0, "high": 1e-2, "log": True}}, "training.lr"),
        ({"model.hidden_size": {"low": 8.5, "high": 16}}, "model.hidden_size"),
        ({"model.dropout": {"low": 0.0, "high": 1.5}}, "model.dropout"),  # TFTConfig refuses
        ({"model.hidden_size": {"choices": [8, 9]}}, "model.hidden_size"),  # heads must divide
        ({"model.num_past": {"choices": [2]}}, "model.num_past"),  # the data decides it
        ({"training.lr": {"low": 1e-4, "hi": 1e-2}}, "training.lr"),
        ({"training.lr": [1e-4, 1e-2]}, "training.lr"),
        ({"training.epochs": {"choices": []}}, "training.epochs"),
        ({"training.validate_initial": {"low": 0, "high": 1}}, "training.validate_initial"),
        ({"training.lr": {"low": "fast", "high": 1e-2}}, "training.lr"),
    ],
)
def test_a_bad_space_names_its_key(space: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        parse_space(space, BASE)


def test_cli_refuses_a_bad_space_with_exit_2_and_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = tmp_path / "space.yaml"
    space.write_text("model.dropout: {low: 0.0, high: 1.5}\n")
    args = [
        "tune",
        *TINY_CLI,
        "--synthetic-market",
        "garch",
        "--synthetic-days",
        "8",
        "--space",
        str(space),
    ]
    assert main([*args, "--output-dir", str(tmp_path / "study")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "model.dropout" in err, err
    space.write_text("training.lr: {low: [1e-4, high: 1e-2}\n")  # not YAML
    assert main([*args, "--output-dir", str(tmp_path / "study")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not valid YAML" in err, err
    assert not (tmp_path / "study").exists()  # refused before the study was created


def test_missing_optuna_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "optuna", None)  # import optuna fails
    space = tmp_path / "space.yaml"
    space.write_text("training.lr: {low: 1e-4, high: 1e-2}\n")
    assert main(["tune", "--space", str(space), "--output-dir", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'foxhunt[tune]'" in err, err


def test_base_config_yaml_takes_defaults_for_what_it_leaves_out(tmp_path: Path) -> None:
    path = tmp_path / "base.yaml"
    path.write_text("data: {synthetic_days: 8, lookback: 16}\ntraining: {lr: 1e-3, epochs: 2}\n")
    config = base_config(path)
    assert config.training.lr == 1e-3 and config.training.epochs == 2
    assert config.training.validate_initial  # today's default, not a saved run's value-then
    assert config.data.lookback == 16 and config.model.lookback is None  # from the data
    full = BASE.to_dict()  # a run's whole config (best.yaml's format) reads back equal
    path.write_text(yaml.safe_dump(full))
    assert base_config(path) == RunConfig.from_dict(full)


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"training": {"lrr": 1}}, "lrr"),
        ({"optimizer": {"lr": 1}}, "optimizer"),
        ({"training": {"epochs": 0}}, "training.epochs"),
        ({"training": {"lr": "fast"}}, "training.lr"),
    ],
)
def test_a_bad_base_config_names_the_field(tmp_path: Path, raw: dict, named: str) -> None:
    path = tmp_path / "base.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(UsageError, match=named.replace(".", r"\.")):
        base_config(path)


def test_flags_override_the_base_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As for `foxhunt train` (docs/configuration.md): --config, then the flags."""
    (tmp_path / "base.yaml").write_text("training: {epochs: 2, lr: 0.01}\n")
    (tmp_path / "space.yaml").write_text("training.lr: {low: 1e-4, high: 1e-2}\n")
    args = ["tune", "--config", str(tmp_path / "base.yaml"), "--epochs", "3"]
    args += ["--space", str(tmp_path / "space.yaml"), "--output-dir", str(tmp_path / "s")]
    assert main([*args, "--print-config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed["training"]["epochs"], printed["training"]["lr"]) == (3, 0.01)
