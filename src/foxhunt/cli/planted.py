"""`foxhunt planted FILE`: write a planted-signal market's bars, with its config beside them."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, generated_command, resolve
from foxhunt.config_fields import setting
from foxhunt.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class PlantedOptions:
    """Where the bars go.

    Attributes:
        output: the Parquet file to write; NAME.planted.json beside it records the market,
            so a run on the file scores the generator's oracle beside the baselines.
        overwrite: replace an existing file.
    """

    output: Path | None = setting(None, positional=True)
    overwrite: bool = False


def command() -> Command:
    # the config's package pulls in pandas: not for `foxhunt --help`
    from foxhunt.data.planted.config import PlantedConfig

    sections = (Section("market", PlantedConfig), Section("", PlantedOptions))
    return generated_command(
        "foxhunt planted",
        "Write the bars of a planted-signal market (volatility drivers known by "
        "construction: volume spikes, a scheduled release, a cross-instrument lead, a hidden "
        "regime; docs/forecasting.md, 'Planted markets') to a Parquet file, its config "
        "beside it, for `foxhunt train --parquet-file FILE` to score the oracle.",
        sections,
        required=("output",),
    )


def register(sub: Any) -> None:
    add_command(
        sub, "planted", "write a planted-signal market's bars (and its oracle's config)", run
    )


def run(line: argparse.Namespace) -> int:
    args = resolve(command(), line.argv)[1]
    from foxhunt.data.planted import PlantedConfig, generate_planted, write_planted

    config = PlantedConfig.from_dict(dict(vars(args.market)))  # lists become tuples
    output = Path(args.output)
    check_planted_output(output, overwrite=args.overwrite)
    bars = generate_planted(config)
    side = write_planted(bars, output)
    print(
        f"planted market: {len(bars.frame)} bars of {', '.join(config.symbols)} -> {output} ({side.name})"
    )
    return 0


def check_planted_output(output: Path, *, overwrite: bool) -> None:
    """Before generating: a Parquet name (`planted bars.csv` wrote Parquet bytes that
    `--csv-file` cannot read), no file of a run, export or backtest (`--overwrite` replaced
    a run's metrics.json), and an existing file only with `--overwrite`."""
    from foxhunt.data.io import PARQUET_SUFFIXES
    from foxhunt.runs import check_output_file

    if not output.name.lower().endswith(PARQUET_SUFFIXES):
        raise ConfigError(
            f"{output}: the bars are written as Parquet; name the file .parquet or .pq"
        )
    check_output_file(output, "foxhunt planted")
    if output.exists() and not overwrite:
        raise ConfigError(f"{output} exists; pass --overwrite to replace it")
