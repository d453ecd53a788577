"""One resolved config from every source, in order: the dataclass defaults, ``--preset``,
each ``--config FILE`` (YAML or JSON; later wins), then the flags, wherever they stand.

A run folder's config.json is a valid ``--config``: what it holds beyond the user's settings
(``versions``, the model's input counts, which the job takes from the data again) is set
aside. ``--print-config`` prints the result as YAML, itself a valid ``--config``.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from foxhunt.cli.checks import FieldType, check_keys, parser_class
from foxhunt.cli.generated import Arg, Section, is_path
from foxhunt.cli.presets import PRESETS
from foxhunt.cli.spellings import Spelling, normalize
from foxhunt.errors import UsageError
from foxhunt.input_path import check_readable_file

#: keys of a saved config.json that are no user setting, set aside when it is a --config
SAVED_ONLY = ("versions", "format")


def no_extra(parser: Any) -> None:
    """A command with no argument beyond its sections' fields."""


@dataclass(frozen=True)
class Command:
    """A subcommand whose arguments are generated from config sections."""

    prog: str
    description: str
    sections: tuple[Section, ...]
    args: tuple[Arg, ...]
    spellings: tuple[Spelling, ...] = ()
    #: ``--preset NAME`` -> its sections (None: the command takes no preset); those of its
    #: fields the command lacks are left out (inspect reads only the data of a train preset)
    presets: Callable[[str], dict[str, Any]] | None = None
    default_preset: str | None = None
    #: whether ``--config FILE`` and ``--print-config`` are offered (a command that runs a
    #: config: train, backtest, tune, bench-memory)
    configs: bool = False
    extra: Callable[[Any], None] = no_extra  # hand-written arguments (today: --model-class)
    #: an excluded field's key -> why a value a config file gives it is refused (None: the
    #: value is dropped, as every other excluded field's is)
    set_aside: dict[str, Callable[[Any], str | None]] = field(default_factory=dict)
    required: tuple[str, ...] = ()  # keys the line must give (a run folder, the bars)

    @property
    def name(self) -> str:
        return self.prog.removeprefix("foxhunt ")

    def usage(self) -> str:
        places = " ".join(a.name for a in self.args if a.positional)
        sources = " [--preset NAME]" if self.presets else ""
        sources += " [--config FILE ...]" if self.configs else ""
        shown = " [--print-config]" if self.configs else ""
        return f"{self.prog} {places}{sources} [--FLAG VALUE ...]{shown}".replace("  ", " ")


def generated_command(
    prog: str, description: str, sections: tuple[Section, ...], **options: Any
) -> Command:
    """A `Command` whose arguments are the fields of ``sections`` (``options``: the rest of
    `Command`'s fields); `--help` and the config sources keep their own names."""
    from foxhunt.cli.generated import arguments

    taken = {"--help", "--config", "--preset", "--print-config"}
    args = tuple(arguments(sections, taken))
    return Command(prog=prog, description=description, sections=sections, args=args, **options)


def build(command: Command) -> Any:
    from foxhunt.cli.generated import add_arguments

    kinds = {a.key: FieldType(a, command.spellings) for a in command.args}
    parser = parser_class()(
        prog=command.prog,
        usage=command.usage(),
        description=command.description,
        exit_on_error=False,
        names={f: kinds[a.key].name for a in command.args for f in a.flags},
    )
    src = parser.add_argument_group("config sources (docs/configuration.md)")
    if command.configs:
        src.add_argument("--config", action="append", help="YAML or JSON config (config.json "
                         "of a run too); several: later wins; flags override them")  # fmt: skip
        src.add_argument("--print-config", action="store_true", help="print the resolved "
                         "config as YAML and exit")  # fmt: skip
    if command.presets is not None:
        names = ", ".join(PRESETS)
        default = f" (default {command.default_preset})" if command.default_preset else ""
        src.add_argument("--preset", help=f"a named starting point (cli/presets.py): {names}"
                         f"{default}")  # fmt: skip
    command.extra(parser)
    add_arguments(parser, command.sections, command.args, lambda arg: kinds[arg.key])
    return parser


def split_sources(
    argv: Sequence[str], command: Command
) -> tuple[list[str], str | None, bool, list[str]]:
    """(config files, preset, print?, the rest) from ``argv``."""
    configs, preset, show, rest = [], command.default_preset, False, []
    sources: tuple[str, ...] = ("--config", "--print-config") if command.configs else ()
    sources += ("--preset",) if command.presets is not None else ()
    i = 0
    while i < len(argv):
        flag, eq, value = argv[i].partition("=")
        i += 1
        if flag not in sources:
            rest.append(argv[i - 1])
        elif flag == "--print-config":
            show = True
        else:
            if not eq:
                if i >= len(argv):
                    raise UsageError(f"{flag} needs a value")
                value, i = argv[i], i + 1
            if flag == "--config":
                configs.append(value)
            else:
                preset = value
    return configs, preset, show, rest


def preset_layer(command: Command, name: str) -> dict[str, Any]:
    """The preset's sections, restricted to the fields the command has."""
    assert command.presets is not None
    keys = {a.key for a in command.args}
    layer = {}
    for section, values in command.presets(name).items():
        kept = {k: v for k, v in values.items() if f"{section}.{k}" in keys}
        if kept:
            layer[section] = kept
    return layer


def read_config(path: str, command: Command) -> dict[str, Any]:
    from foxhunt.storage.bounded_yaml import load_yaml, read_yaml_text

    check_readable_file(Path(path), "config (--config)")
    where = f"--config {path}"
    data = load_yaml(read_yaml_text(Path(path), where), where)  # JSON is YAML
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(
            f"--config {path}: expected a mapping of sections, got a {type(data).__name__}"
        )
    for key in SAVED_ONLY:
        data.pop(key, None)
    sections = {s.name for s in command.sections if s.name}
    top = {f.name for s in command.sections if not s.name for f, _ in s.fields()}
    for key, value in data.items():  # a filled one is refused by the parser, naming its key
        if key not in sections | top and (value is None or value == {}):
            raise UsageError(
                f"--config {path}: unknown section {key!r}; use {', '.join(sorted(sections))}"
            )
    for s in command.sections:
        section = data.get(s.name)
        if section is None:  # `model:` with nothing under it: an empty section
            data.pop(s.name, None)
        elif not isinstance(section, dict):  # `model: [1, 2]` was dropped or printed back
            got = f"{type(section).__name__} {reprlib.repr(section)}"
            raise UsageError(
                f"--config {path}: section {s.name!r} must be a mapping of its fields "
                f"({s.name}: {{field: value}}), got the {got}"
            )
        else:
            for name in s.exclude:  # not user settings: the code sets them
                key = s.key(name)
                if key in command.set_aside and section.get(name) is not None:
                    why = command.set_aside[key](section[name])
                    if why:
                        raise UsageError(f"--config {path}: {key}: {why}")
                section.pop(name, None)
    return data


def resolve(command: Command, argv: Sequence[str]) -> tuple[Any, Any, bool]:
    """(parser, resolved namespace, print?) for ``argv``."""
    configs, preset, show, rest = split_sources(argv, command)
    parser = build(command)
    cfg = parser.get_defaults()
    layers = [(f"--preset {preset}", preset_layer(command, preset))] if preset else []
    layers += [(f"--config {path}", read_config(path, command)) for path in configs]
    known = list(cfg.keys())
    for source, layer in layers:
        try:  # each value is checked as it is read (checks.FieldType), naming its source
            check_keys(layer, known, command.args)
            cfg = parser.parse_object(layer, namespace=cfg)
        except UsageError as exc:
            raise UsageError(f"{source}: {exc}") from None
    flags = normalize(rest, command.args, command.spellings)
    check_given_once(rest, flags, command)
    cfg = parser.parse_args(flags, namespace=cfg)  # its errors are UsageErrors (checks.Parser)
    for arg in command.args:  # read as text (config_fields.value_as)
        if is_path(arg.hint) and cfg.get(arg.key) is not None:
            cfg[arg.key] = Path(cfg[arg.key])
    if not show:
        check_required(cfg, command)
    if command.presets is not None:
        cfg.preset = preset  # the preset's name (bench-memory measures its model)
    return parser, cfg, show


def parsed(command: Command, argv: Sequence[str]) -> Any | None:
    """The resolved config of ``argv``, or None once ``--print-config`` has printed it."""
    parser, cfg, show = resolve(command, argv)
    if show:
        print(dump(parser, cfg), end="")
        return None
    return cfg


def check_required(cfg: Any, command: Command) -> None:
    by_key = {a.key: a for a in command.args}
    for key in command.required:
        if cfg.get(key) is None:
            raise UsageError(f"{command.name}: {by_key[key].name} is required")


def check_given_once(argv: Sequence[str], flags: Sequence[str], command: Command) -> None:
    """Refuse a field that two spellings on the command line give different values
    (``--lr`` and ``--training.lr``, ``--parquet-file`` and ``--csv-file``, ``--seed`` and
    ``--training.seed``, ``--use-gradient-checkpointing`` and ``--checkpoint-segments``)
    rather than let the later one win unseen. One flag repeated is an override, as in any
    command line: the last one wins. ``flags`` are ``normalize``'s ``--key VALUE`` pairs of
    ``argv``."""
    keys_of: dict[str, tuple[str, ...]] = {f: (a.key,) for a in command.args for f in a.flags}
    for spelling in command.spellings:
        keys_of[spelling.flag] = tuple(key for key, _ in spelling.expand("1"))
    spelled: dict[str, set[str]] = {}  # key -> the flags that set it
    for token in argv:
        name = token.partition("=")[0]
        if name.startswith("--no-") and "--" + name[5:] in keys_of:
            name = "--" + name[5:]  # --no-report is the --report switch
        for key in keys_of.get(name, ()):
            spelled.setdefault(key, set()).add(name)
    values: dict[str, list[str]] = {}
    for key, value in pairwise(flags):
        if key.startswith("--") and not value.startswith("--"):
            values.setdefault(key[2:], []).append(value)
    for key, given in values.items():
        if len(set(given)) > 1 and len(spelled.get(key, ())) > 1:
            names = " and ".join(sorted(spelled[key]))
            raise UsageError(f"{names} both set {key}, to {given[0]} and {given[-1]}: give it once")


def dump(parser: Any, cfg: Any) -> str:
    """The resolved config as YAML, without the sources themselves."""
    out = cfg.clone()
    for key in ("config", "preset", "print_config"):
        out.pop(key, None)
    for key, value in out.items():
        if isinstance(value, Path):  # the parser reads a path as text (config_fields.value_as)
            out[key] = str(value)
    return str(parser.dump(out, skip_unset=False))


def add_command(sub: Any, name: str, help_text: str, run: Callable[[Any], int]) -> None:
    """Register subcommand ``name``: the top-level parser hands it the rest of the line (its
    ``--help`` too), which ``run`` parses with its generated arguments (``resolve``)."""
    p = sub.add_parser(name, help=help_text, add_help=False)
    p.set_defaults(run=run)
