"""The CLI generated from the config dataclasses (docs/configuration.md): one set of
defaults, every field a flag and a YAML key, old spellings, --print-config / --config."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from safetensors.torch import load_file

from foxhunt.cli import main
from foxhunt.cli.backtest import backtest_command
from foxhunt.cli.generated import Arg, field_default, tuple_item
from foxhunt.cli.resolve import Command, resolve
from foxhunt.cli.train_config import run_config, train_command
from foxhunt.cli.tune import tune_command
from foxhunt.data import DataConfig
from foxhunt.model.config import TFTConfig
from foxhunt.runs import RunConfig
from foxhunt.training.config import TrainingConfig
from helpers import SYNTHETIC_CLI, TINY_CLI

COMMANDS = {"train": train_command(), "backtest": backtest_command(), "tune": tune_command()}


def parsed(command: Command, argv: list[str]) -> dict[str, Any]:
    return dict(resolve(command, argv)[1].items())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_cli_defaults_are_the_dataclass_defaults(name: str) -> None:
    command = COMMANDS[name]
    values = parsed(command, [])
    checked = 0
    for section in command.sections:
        for f, _ in section.fields():
            assert values[section.key(f.name)] == field_default(f), section.key(f.name)
            checked += 1
    assert checked == len(command.args) > 40


def test_the_default_run_is_the_dataclasses_default_run() -> None:
    _, cfg, _ = resolve(train_command(), [])
    assert run_config(cfg) == RunConfig(
        data=DataConfig(), model=TFTConfig(), training=TrainingConfig()
    )


def other_value(arg: Arg) -> Any:
    """A value of the field's type that differs from its default."""
    hint, default = arg.hint, arg.default
    union = typing.get_origin(hint) in (types.UnionType, typing.Union)
    options = [h for h in (typing.get_args(hint) if union else (hint,)) if h is not type(None)]
    for h in options:
        if typing.get_origin(h) is typing.Literal:
            return next(c for c in typing.get_args(h) if c != default)
    if bool in options:
        return not default
    if (item := tuple_item(hint)) is not None:
        if typing.get_origin(item) is typing.Literal:
            return tuple(typing.get_args(item)[:2])
        return {str: ("x", "y"), int: (3, 5), float: (0.2, 0.8)}[item]
    if int in options:
        return (default or 1) + 1
    if float in options:
        return (default or 1.0) * 0.5
    if Path in options:
        return Path("bars.parquet")
    if str in options:
        return "10min"
    raise AssertionError(f"{arg.key}: no test value for {hint}")


def flag_text(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)  # the comma form of the old flags
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_field_is_settable_by_a_flag_and_from_yaml(name: str, tmp_path: Path) -> None:
    """Every field set at once, each to a value other than its default: by its flag, then by
    its key in one YAML file. (One parse each: a parse costs ~0.1 s, and one per field and
    form took ~6 s a command; a flag that set another field, or none, still shows.)"""
    command = COMMANDS[name]
    values = {arg.key: other_value(arg) for arg in command.args}
    argv: list[str] = []
    content: dict[str, Any] = {}
    for arg in command.args:
        value = values[arg.key]
        assert value != arg.default, arg.key
        argv += [arg.flag, flag_text(value)]
        section, _, field = arg.key.rpartition(".")
        plain = list(value) if isinstance(value, tuple) else value
        plain = str(value) if isinstance(value, Path) else plain
        (content.setdefault(section, {}) if section else content)[field] = plain
    by_flag = parsed(command, argv)
    assert {key: by_flag[key] for key in values} == values
    file = tmp_path / "c.yaml"
    file.write_text(yaml.safe_dump(content))
    from_yaml = parsed(command, ["--config", str(file)])
    assert {key: from_yaml[key] for key in values} == values


def error_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("foxhunt: error:")]
    assert len(lines) == 1, err
    return lines[0]


def test_unknown_yaml_keys_and_bad_values_exit_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {
        "unknown": ({"model": {"hidden_sise": 8}}, "model.hidden_sise"),
        "type": ({"training": {"epochs": "many"}}, "training.epochs"),
        "choice": ({"training": {"device": "gpu"}}, "training.device"),
        "range": ({"data": {"val_fraction": 1.5}}, "data.val_fraction"),
        "section": ({"trainning": {"lr": 0.1}}, "trainning"),
    }
    for name, (content, field) in cases.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(content))
        line = error_line(["train", "--config", str(path), "--print-config"], capsys)
        assert field in line and str(path) in line, line
    for args, field in [
        (["--epochs", "x"], "--epochs"),
        (["--device", "gpu"], "training.device"),
        (["--dropout", "1.5"], "--dropout"),
        (["--output", "median"], "model.output"),
    ]:
        assert field in error_line(["train", *args, "--print-config"], capsys)


#: old spellings and what they mean in the generated names
SPELLINGS = [
    (["--no-calibrate"], ["--training.calibrate", "false"]),
    (["--no-validate-initial"], ["--validate-initial", "false"]),
    (["--learn-spread"], ["--model.learn_spread", "true"]),
    (["--use-gradient-checkpointing"], ["--model.checkpointing", "full"]),
    (["--checkpoint-segments", "past_vsn,lstm_encoder"], ["--checkpointing", "[past_vsn, lstm_encoder]"]),
    (["--quantiles", "0.2,0.5,0.8"], ["--model.quantiles", "[0.2, 0.5, 0.8]"]),
    (["--observed-columns", "a,b"], ["--data.observed_columns", "[a, b]"]),
    (["--max-gap", "none"], ["--data.max_gap", "null"]),
    (["--seed", "7"], ["--training.seed", "7", "--synthetic-seed", "7"]),
    (["--qat", "--qat-freeze-after", "9"], ["--options.qat", "true", "--quantization.freeze_after", "9"]),
    (["--no-report", "--output-dir", "d"], ["--options.report", "false", "--options.output_dir", "d"]),
    (["--csv-file", "b.csv"], ["--data.path", "b.csv"]),
    (["--parquet-file=b.csv"], ["--data-file", "b.csv"]),
    (["--logger", "tensorboard", "--logger", "mlflow"], ["--tracking.loggers", "[tensorboard, mlflow]"]),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new"), SPELLINGS)
def test_old_flag_spellings_parse_to_the_same_config(old: list[str], new: list[str]) -> None:
    command = train_command()
    assert parsed(command, old) == parsed(command, new) != parsed(command, [])


def test_precedence_preset_then_configs_then_flags(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.json"
    first.write_text("model:\n  hidden_size: 16\ntraining:\n  lr: 0.01\n  epochs: 3\n")
    second.write_text(json.dumps({"training": {"lr": 0.02}}))
    argv = ["--lr", "0.03", "--config", str(first), "--preset", "cpu-reference"]
    values = parsed(train_command(), [*argv, "--config", str(second)])
    assert values["model.hidden_size"] == 16  # the config over the preset (64)
    assert values["model.variable_hidden_size"] == 16  # the preset's, over the default 8
    assert values["training.batch_size"] == 32  # the preset's
    assert values["training.epochs"] == 3
    assert values["training.lr"] == 0.03  # the flag, wherever it stands


def train_quietly(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["train", *args, "--no-report"]) == 0
    return out.getvalue()


def test_print_config_and_a_run_config_reproduce_the_run_bit_for_bit(tmp_path: Path) -> None:
    flags = [*SYNTHETIC_CLI, *TINY_CLI, "--max-steps-per-epoch", "3", "--epochs", "1"]
    flags += ["--seed", "3", "--device", "cpu", "--no-calibrate"]
    train_quietly([*flags, "--output-dir", str(tmp_path / "flags")])
    printed = tmp_path / "printed.yaml"
    printed.write_text(train_quietly([*flags, "--print-config"]))
    assert yaml.safe_load(printed.read_text())["model"]["hidden_size"] == 8
    train_quietly(["--config", str(printed), "--output-dir", str(tmp_path / "yaml")])
    saved = tmp_path / "flags" / "config.json"
    train_quietly(["--config", str(saved), "--output-dir", str(tmp_path / "json")])
    weights = [(tmp_path / d / "model.safetensors").read_bytes() for d in ("flags", "yaml", "json")]
    assert weights[0] == weights[1] == weights[2]
    tensors = load_file(tmp_path / "flags" / "model.safetensors")
    assert tensors and all(t.isfinite().all() for t in tensors.values())
    # the saved config is complete: read back, it is the run the printed YAML describes, with
    # the thread count it ran at where the YAML leaves the default (None) to the machine
    from_json = run_config(resolve(train_command(), ["--config", str(saved)])[1])
    described = run_config(resolve(train_command(), ["--config", str(printed)])[1])
    assert described.training.threads is None and isinstance(from_json.training.threads, int)
    ran = dataclasses.replace(described.training, threads=from_json.training.threads)
    assert from_json == dataclasses.replace(described, training=ran)


def test_config_json_keeps_its_format_and_the_model_filled(tmp_path: Path) -> None:
    saved = tmp_path / "config.json"
    train_quietly([*SYNTHETIC_CLI, *TINY_CLI, "--max-steps-per-epoch", "2", "--epochs", "1",
                   "--device", "cpu", "--output-dir", str(tmp_path)])  # fmt: skip
    model = json.loads(saved.read_text())["model"]
    assert {"num_static", "num_past", "num_future", "lookback", "vol_signals"} <= set(model)
    assert model["num_past"] >= 1 and model["lookback"] == 16
    assert dataclasses.asdict(TFTConfig.from_dict(model))["num_past"] == model["num_past"]


@pytest.mark.parametrize("name", ["cpu-reference", "tft-225"])
def test_presets_train_the_benchmarks_models(name: str) -> None:
    from foxhunt.bench.memory import PRESETS
    from foxhunt.model.config import DATA_FIELDS

    bench = PRESETS[name]
    config = run_config(resolve(train_command(), ["--preset", name])[1])
    assert (config.data.lookback, config.data.horizon) == (
        bench.config.lookback,
        bench.config.horizon,
    )
    assert config.training.batch_size == bench.batch_size
    unfitted = dataclasses.replace(bench.config, **dict.fromkeys(DATA_FIELDS))
    assert config.model == unfitted  # the inputs are the data's


def test_an_unknown_preset_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert "tft-225" in error_line(["train", "--preset", "tft-9000", "--print-config"], capsys)
