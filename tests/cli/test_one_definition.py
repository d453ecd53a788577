"""A new config field is one definition (issue 28): its flag, its bound check (exit 2, one line
naming the flag) and its help all come from the dataclass field, with no other edit (what
runs saved before it read it as is a migration, foxhunt/migrations.py); and every flag of every subcommand is some dataclass's field."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from dataclasses import dataclass

import pytest

from foxhunt.cli import commands, main
from foxhunt.cli.generated import Section, arguments
from foxhunt.cli.resolve import Command, build, resolve
from foxhunt.config_fields import Range, check_ranges, setting
from foxhunt.errors import ConfigError, UsageError


@dataclass(frozen=True, kw_only=True)
class Throwaway:
    """A config that exists only in this test.

    Attributes:
        wiggle_room: how much room to wiggle, in wiggles.
        depth: how deep (> 0).
    """

    wiggle_room: int = setting(4, range=Range(2, 9))
    depth: float = 1.0

    def __post_init__(self) -> None:
        check_ranges(self, "Throwaway")


def throwaway_command() -> Command:
    sections = (Section("throwaway", Throwaway),)
    return Command(
        prog="foxhunt throwaway",
        description="a command made of one dataclass",
        sections=sections,
        args=tuple(arguments(sections, {"--help"})),
    )


def test_a_new_field_is_a_flag_with_its_bound_and_its_help() -> None:
    command = throwaway_command()
    cfg = resolve(command, ["--wiggle-room", "7"])[1]
    assert cfg.throwaway.wiggle_room == 7 and cfg.throwaway.depth == 1.0
    assert resolve(command, ["--throwaway.wiggle_room", "3"])[1].throwaway.wiggle_room == 3
    for value, why in (("10", ">= 2 and <= 9"), ("1", ">= 2 and <= 9"), ("x", "an integer")):
        with pytest.raises(UsageError) as refused:
            resolve(command, ["--wiggle-room", value])
        line = str(refused.value)
        assert line.startswith("--wiggle-room (throwaway.wiggle_room)") and why in line, line
        assert "\n" not in line and refused.value.exit_code == 2
    with pytest.raises(UsageError, match=r"--depth \(throwaway.depth\): must be >= 0"):
        resolve(command, ["--depth", "-1"])  # no range given: a float is >= 0
    text = io.StringIO()
    with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
        build(command).parse_args(["--help"])
    assert "--wiggle-room" in text.getvalue() and "how much room to wiggle" in text.getvalue()
    # the Python API checks the same bound
    with pytest.raises(ConfigError, match=r"Throwaway.wiggle_room=12: must be >= 2 and <= 9"):
        Throwaway(wiggle_room=12)


#: options of a command that are no config field: where its settings come from, and the
#: model class (RunConfig.model_class: RunConfig imports torch, which --help must not)
SOURCES = {"--help", "-h", "--config", "--preset", "--print-config", "--model-class"}


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_flag_of_every_command_is_a_dataclass_field(name: str) -> None:
    command = commands()[name]
    fields = {
        s.key(f.name): f for s in command.sections for f in dataclasses.fields(s.cls) if f.init
    }
    flags = {}
    for arg in command.args:
        assert arg.key in fields, arg.key
        flags.update(dict.fromkeys(arg.flags, arg))
        if arg.range is not None and "range" in fields[arg.key].metadata:
            assert arg.range == fields[arg.key].metadata["range"], arg.key
    parser = build(command)
    options = {o for a in parser._actions for o in a.option_strings}
    assert options - SOURCES == set(flags), name


def test_no_option_class_copies_another_s_defaults() -> None:
    """The CLI's option sections extend the job's and the study's settings: each default is
    defined once (a field both have is inherited, never declared twice)."""
    from foxhunt.cli.train_config import TrainOptions
    from foxhunt.cli.tune import StudyOptions
    from foxhunt.jobs.options import JobOptions
    from foxhunt.training.run_options import RunOptions
    from foxhunt.tune import StudySettings, TuneConfig

    for base, users in ((RunOptions, (TrainOptions, JobOptions)), (StudySettings, (StudyOptions, TuneConfig))):  # fmt: skip
        for cls in users:
            assert issubclass(cls, base)
            own = set(cls.__annotations__)  # what the class itself declares
            assert not own & {f.name for f in dataclasses.fields(base)}, (cls, own)


def test_a_bad_value_of_any_command_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, flag in (
        (["export", "run", "--opset", "99"], "--opset"),
        (["inspect", "bars.parquet", "--lookback", "0"], "--lookback"),
        (["predict", "run", "--parquet-file", "b.parquet", "--symbols", "ES", "--nope"], "--nope"),
        (["bench-memory", "--steps", "0"], "--steps"),
        (["predict", "--parquet-file", "b.parquet"], "RUN_DIR"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and flag in err[0] and err[0].startswith("foxhunt: error:"), err
