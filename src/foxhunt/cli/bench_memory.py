"""`foxhunt bench-memory`: what activation checkpointing saves and costs, measured."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from foxhunt.bench.presets import PRESETS
from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, generated_command, parsed
from foxhunt.config_fields import POSITIVE, Range, setting
from foxhunt.errors import ConfigError
from foxhunt.training.threads import CEILING

if TYPE_CHECKING:  # torch and the benchmark are imported where used: --help needs neither
    import torch

log = logging.getLogger("foxhunt.memory")


@dataclass(frozen=True, kw_only=True)
class BenchOptions:
    """What `foxhunt bench-memory` measures, and how.

    Attributes:
        modes: comma-separated: "none", "full", segment names, or "a+b" for several
            (default: none, each segment, full).
        device: where to measure: "auto" (CUDA when available), "cpu" or "cuda".
        memory_limit_gb: cap the CUDA allocator at this many GB, as on a smaller card
            (CUDA only).
        steps: timed steps per mode (median).
        warmup: untimed rounds first.
        threads: torch intra-op threads, 1 to 256 (training/threads.py's ceiling).
        time: measure the step time (--no-time skips it).
        peak: measure the peak memory (--no-peak skips it).
        predictions: instead: the --memory-budget planner's predicted vs measured peak of a
            training step for plain, checkpointed and micro-batch plans (CPU).
        json: write the results as JSON to this file (given alone: to stdout instead of the
            table).
    """

    modes: tuple[str, ...] | None = None
    device: Literal["auto", "cpu", "cuda"] = "cpu"
    memory_limit_gb: float | None = setting(None, range=POSITIVE)
    steps: int = setting(7, range=Range(1, 100_000))
    warmup: int = setting(2, range=Range(0, 10_000))
    threads: int | None = setting(None, range=Range(1, CEILING))
    time: bool = True
    peak: bool = True
    predictions: bool = False
    json: str | None = setting(None, bare="-")


def command() -> Command:
    """The model preset (`--preset`, default cpu-reference: the train presets' model, windows
    and batch) and the config fields it measures: width, windows, batch, the bars and their
    gaps (as `foxhunt train` has them), and the measurement's own options."""
    from foxhunt.cli.common import data_section
    from foxhunt.cli.presets import preset
    from foxhunt.model.config import TFTConfig
    from foxhunt.training.config import TrainingConfig

    sections = (
        data_section("path", "lookback", "horizon", "max_gap"),
        Section("model", TFTConfig, only=("hidden_size", "variable_hidden_size")),
        Section("training", TrainingConfig, only=("batch_size", "seed")),
        Section("", BenchOptions),
    )
    return generated_command(
        "foxhunt bench-memory",
        "For one model config and batch: plain training vs each checkpointed "
        "segment alone vs full checkpointing. Prints a table (or JSON with --json).",
        sections,
        presets=preset,
        default_preset="cpu-reference",
        configs=True,
    )


def register(sub: Any) -> None:
    add_command(
        sub, "bench-memory", "measure activation checkpointing: bytes saved, peak memory, time", run
    )


def resolve_device(name: str) -> torch.device:
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is available; use --device cpu")
    return torch.device(name)


def run(line: argparse.Namespace) -> int:
    args = parsed(command(), line.argv)
    if args is None:  # --print-config printed it
        return 0
    # imported once the line is parsed: --help needs none of them
    from foxhunt.bench.accuracy import check_predictions, format_checks
    from foxhunt.bench.memory import run_benchmark
    from foxhunt.bench.table import format_table
    from foxhunt.storage import atomic_write_json

    json_file = check_json(args)
    batch_size = args.training.batch_size
    modes = check_modes(args.modes)
    cfg, batch = model_config(args)
    device = measuring_device(args)
    seed = args.training.seed
    if args.predictions:
        if device.type != "cpu":
            raise ConfigError(
                "--predictions measures with the CPU tensor tracker; use --device cpu"
            )
        print(format_checks(check_predictions(cfg, batch_size, seed=seed), batch_size))
        return 0
    path = args.data.path
    report = run_benchmark(
        cfg,
        batch_size,
        preset=args.preset if batch is None else f"{args.preset} on {path.name}",
        modes=modes,
        device=device,
        steps=args.steps,
        warmup=args.warmup,
        measure_time=args.time,
        measure_peak_memory=args.peak,
        memory_limit_gb=args.memory_limit_gb if device.type == "cuda" else None,
        seed=seed,
        batch=batch,
    )
    if args.json == "-":
        json.dump(report.to_dict(), sys.stdout, indent=2)
        print()
    elif json_file is not None:
        atomic_write_json(json_file, report.to_dict())
    if args.json != "-":
        print(format_table(report))
    return 0


def measuring_device(args: Any) -> torch.device:
    """The device measured on, with --threads applied (a cap only CUDA takes is said)."""
    import torch

    device = resolve_device(args.device)
    if args.memory_limit_gb is not None and device.type != "cuda":
        log.warning(
            "--memory-limit-gb %g is ignored on %s: only the CUDA allocator can be capped; "
            "compare the measured peaks with the limit instead",
            args.memory_limit_gb,
            device,
        )
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return device


def check_json(args: Any) -> Path | None:
    """The --json file, checked before minutes of measuring: a FIFO blocked open(), and
    RUN/metrics.json was replaced."""
    from foxhunt.runs import check_output_file
    from foxhunt.storage.atomic import check_replaceable

    json_file = None if args.json in (None, "-") else Path(args.json)
    if args.json is not None and args.predictions:  # it printed a table and wrote nothing
        raise ConfigError("--json writes the benchmark's results; --predictions has none")
    if json_file is not None:
        check_output_file(json_file, "--json")
        check_replaceable(json_file)
    return json_file


def check_modes(given: tuple[str, ...] | None) -> list[str]:
    """The checkpointing modes to measure; a typo fails before minutes of measuring."""
    from foxhunt.bench.memory import default_modes
    from foxhunt.model.checkpointing import resolve_policy

    modes = list(given) if given else default_modes()
    for mode in modes:
        if mode not in ("none", "full"):
            resolve_policy(mode.split("+"))
    return modes


def model_config(args: Any) -> tuple[Any, Any]:
    """The preset's model with the widths and windows given, checked to fit in memory (not
    an OOM kill); with --parquet-file, completed from the bars, with their first batch."""
    from foxhunt.bench.memory import with_overrides
    from foxhunt.model.size import check_step_fits_in_memory

    cfg = with_overrides(
        PRESETS[args.preset].config,
        hidden_size=args.model.hidden_size,
        variable_hidden_size=args.model.variable_hidden_size,
        lookback=args.data.lookback,
        horizon=args.data.horizon,
    )
    batch = None
    if args.data.path is not None:
        cfg, batch = real_windows(args, cfg)
    check_step_fits_in_memory(cfg, args.training.batch_size)
    return cfg, batch


def real_windows(args: Any, cfg: Any) -> tuple[Any, Any]:
    """The model config completed from real bars (input counts from the data, as a run's) and
    the first training batch of their windows, prepared as `foxhunt train --preset` would."""
    from dataclasses import replace

    from foxhunt.cli.presets import preset
    from foxhunt.data import DataConfig, make_loader, prepare_data
    from foxhunt.jobs.prepare import fit_model_config
    from foxhunt.model.config import DATA_FIELDS

    path, batch_size = args.data.path, args.training.batch_size
    groups = preset(args.preset).get("data", {}).get("feature_groups", ())
    data = prepare_data(DataConfig(**args.data.as_dict(), feature_groups=tuple(groups)))
    if len(data.train) < batch_size:
        raise ConfigError(
            f"--parquet-file {path}: {len(data.train)} training windows, fewer than "
            f"the batch of {batch_size}"
        )
    unset = replace(cfg, **dict.fromkeys(DATA_FIELDS))
    fitted = fit_model_config(unset, data)
    batch = next(iter(make_loader(data.train, batch_size=batch_size, shuffle=False)))
    return fitted, batch
