"""`foxhunt bench-memory`: what activation checkpointing saves and costs, measured."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foxhunt.bench.presets import PRESETS
from foxhunt.cli.common import csv_tuple
from foxhunt.errors import ConfigError

if TYPE_CHECKING:  # torch and the benchmark are imported where used: --help needs neither
    import torch

log = logging.getLogger("foxhunt.memory")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench-memory",
        help="measure activation checkpointing: bytes saved for backward, peak memory, time",
        description="For one model config and batch: plain training vs each checkpointed "
        "segment alone vs full checkpointing. Prints a table (or JSON with --json).",
    )
    p.add_argument("--preset", default="cpu-reference", choices=sorted(PRESETS))
    p.add_argument("--batch-size", type=int, default=None, help="override the preset's batch")
    p.add_argument("--hidden-size", type=int, default=None)
    p.add_argument("--variable-hidden-size", type=int, default=None)
    p.add_argument("--lookback", type=int, default=None)
    p.add_argument("--horizon", type=int, default=None)
    p.add_argument(
        "--modes",
        type=csv_tuple,
        default=None,
        help='comma-separated: "none", "full", segment names, or "a+b" for several '
        "(default: none, each segment, full)",
    )
    p.add_argument(
        "--parquet-file",
        "--data-file",
        dest="data_file",
        type=Path,
        default=None,
        help="measure on the first training batch of real bars, with the train preset's feature "
        "groups (the model's input counts then come from the data); default: random inputs",
    )
    p.add_argument(
        "--max-gap", default=None, help="with --parquet-file: as foxhunt train's --max-gap"
    )
    p.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    p.add_argument(
        "--memory-limit-gb",
        type=float,
        default=None,
        help="cap the CUDA allocator at this many GB, as on a smaller card (CUDA only)",
    )
    p.add_argument("--steps", type=int, default=7, help="timed steps per mode (median)")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds first")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--no-time", action="store_true", help="skip the step-time measurement")
    p.add_argument("--no-peak", action="store_true", help="skip the peak-memory measurement")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--predictions",
        action="store_true",
        help="instead: the --memory-budget planner's predicted vs measured peak of a training "
        "step for plain, checkpointed and micro-batch plans (CPU)",
    )
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="write the results as JSON to FILE (or stdout instead of the table)",
    )
    p.set_defaults(run=run)


def resolve_device(name: str) -> torch.device:
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is available; use --device cpu")
    return torch.device(name)


def run(args: argparse.Namespace) -> int:
    import torch

    from foxhunt.bench.accuracy import check_predictions, format_checks
    from foxhunt.bench.memory import default_modes, run_benchmark, with_overrides
    from foxhunt.bench.table import format_table
    from foxhunt.model.size import check_step_fits_in_memory
    from foxhunt.runs import check_output_file
    from foxhunt.storage import atomic_write_json
    from foxhunt.storage.atomic import check_replaceable
    from foxhunt.transforms.checkpointing import resolve_policy

    # before minutes of measuring: a FIFO blocked open(), RUN/metrics.json was replaced
    json_file = None if args.json in (None, "-") else Path(args.json)
    if args.json is not None and args.predictions:  # it printed a table and wrote nothing
        raise ConfigError("--json writes the benchmark's results; --predictions has none")
    if json_file is not None:
        check_output_file(json_file, "--json")
        check_replaceable(json_file)
    preset = PRESETS[args.preset]
    cfg = with_overrides(
        preset.config,
        hidden_size=args.hidden_size,
        variable_hidden_size=args.variable_hidden_size,
        lookback=args.lookback,
        horizon=args.horizon,
    )
    batch = None
    if args.data_file is not None:
        cfg, batch = real_windows(args, cfg, args.batch_size or preset.batch_size)
    modes = list(args.modes) if args.modes else default_modes()
    for mode in modes:  # fail on a typo before minutes of measuring
        if mode not in ("none", "full"):
            resolve_policy(mode.split("+"))
    check_step_fits_in_memory(cfg, args.batch_size or preset.batch_size)  # not an OOM kill
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
    if args.predictions:
        if device.type != "cpu":
            raise ConfigError(
                "--predictions measures with the CPU tensor tracker; use --device cpu"
            )
        batch_size = args.batch_size or preset.batch_size
        print(format_checks(check_predictions(cfg, batch_size, seed=args.seed), batch_size))
        return 0
    report = run_benchmark(
        cfg,
        args.batch_size or preset.batch_size,
        preset=args.preset if batch is None else f"{args.preset} on {args.data_file.name}",
        modes=modes,
        device=device,
        steps=args.steps,
        warmup=args.warmup,
        measure_time=not args.no_time,
        measure_peak_memory=not args.no_peak,
        memory_limit_gb=args.memory_limit_gb if device.type == "cuda" else None,
        seed=args.seed,
        batch=batch,
    )
    if args.json == "-":
        json.dump(report.to_dict(), sys.stdout, indent=2)
        print()
        return 0
    if json_file is not None:
        atomic_write_json(json_file, report.to_dict())
    print(format_table(report))
    return 0


def real_windows(args: argparse.Namespace, cfg: Any, batch_size: int) -> tuple[Any, Any]:
    """The model config completed from real bars (input counts from the data, as a run's) and
    the first training batch of their windows, prepared as `foxhunt train --preset` would."""
    from dataclasses import replace

    from foxhunt.cli.presets import PRESETS as TRAIN_PRESETS
    from foxhunt.data import DataConfig, make_loader, prepare_data
    from foxhunt.jobs.prepare import fit_model_config
    from foxhunt.model.config import DATA_FIELDS

    sections = TRAIN_PRESETS[args.preset]() if args.preset in TRAIN_PRESETS else {}
    data_fields = {**sections.get("data", {}), "lookback": cfg.lookback, "horizon": cfg.horizon}
    if args.max_gap is not None:
        data_fields["max_gap"] = args.max_gap
    data = prepare_data(DataConfig(**{**data_fields, "path": args.data_file}))
    if len(data.train) < batch_size:
        raise ConfigError(
            f"--parquet-file {args.data_file}: {len(data.train)} training windows, fewer than "
            f"the batch of {batch_size}"
        )
    unset = replace(cfg, **dict.fromkeys(DATA_FIELDS))
    fitted = fit_model_config(unset, data)
    batch = next(iter(make_loader(data.train, batch_size=batch_size, shuffle=False)))
    return fitted, batch
