"""`foxhunt export`: an int8 or ONNX model folder that `predict` and `evaluate` take as a run folder."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foxhunt.cli.generated import Section
from foxhunt.cli.resolve import Command, add_command, generated_command, resolve
from foxhunt.config_fields import Range, setting


@dataclass(frozen=True, kw_only=True)
class ExportOptions:
    """What to export, and where.

    Attributes:
        run_dir: folder of a trained run.
        onnx: ONNX model run by ONNX Runtime (FP32; with --int8 int8 in QDQ form;
            docs/export.md).
        int8: int8: convert a QAT run (foxhunt train --qat) with its frozen scales; with
            --onnx, a QAT run's scales or, for an FP32 run, scales calibrated on its
            training bars.
        dynamic: post-training dynamic int8 of an FP32 run (for comparison).
        opset: ONNX opset of --onnx (default 18).
        output: export folder (default: RUN_DIR/int8[-dynamic] or RUN_DIR/onnx[-int8]).
        overwrite: replace an export of another kind or of another run in the export folder.
    """

    run_dir: Path | None = setting(None, positional=True)
    onnx: bool = False
    int8: bool = False
    dynamic: bool = False
    opset: int | None = setting(None, range=Range(18, 30))
    output: Path | None = None
    overwrite: bool = False


def command() -> Command:
    sections = (Section("", ExportOptions),)
    return generated_command(
        "foxhunt export",
        "Write an int8 or ONNX export of RUN_DIR: pass the export folder to "
        "`foxhunt predict` / `foxhunt evaluate` in place of the run folder.",
        sections,
        required=("run_dir",),
    )


def register(sub: Any) -> None:
    add_command(sub, "export", "write an int8 CPU model or an ONNX model of a trained run", run)


def export_mode(args: Any) -> str | None:
    """ "qat" (--int8), "dynamic" (--dynamic) or None (neither)."""
    from foxhunt.errors import UsageError

    if args.int8 and args.dynamic:
        raise UsageError("export: --int8 and --dynamic are two exports: choose one")
    return "qat" if args.int8 else "dynamic" if args.dynamic else None


def run(line: argparse.Namespace) -> int:
    args = resolve(command(), line.argv)[1]
    # imported once the line is parsed: --help needs none of them
    from foxhunt.errors import FoxhuntError
    from foxhunt.exports.deps import require_onnx
    from foxhunt.exports.int8 import export_run
    from foxhunt.runs import EXPORT_DIRS
    from foxhunt.runs.folder import named

    mode = export_mode(args)
    if args.onnx:
        if mode == "dynamic":
            raise FoxhuntError("--dynamic does not go with --onnx: use --onnx --int8")
        kind = "onnx-int8" if mode == "qat" else "onnx"
        require_onnx("foxhunt export --onnx")
        check_opset(args.opset)
        output = named(args.output or args.run_dir / EXPORT_DIRS[kind])
        check_export_output(output, kind=kind, run_dir=args.run_dir, overwrite=args.overwrite)
        with staged(output) as workdir:
            return _onnx(args, workdir, output, int8=kind != "onnx")
    if mode is None:
        raise FoxhuntError("say what to export: --int8, --dynamic or --onnx [--int8]")
    if args.opset is not None:
        raise FoxhuntError("--opset goes with --onnx")
    output = named(args.output or args.run_dir / EXPORT_DIRS[mode])
    check_export_output(output, kind=mode, run_dir=args.run_dir, overwrite=args.overwrite)
    with staged(output) as workdir:
        spec = export_run(args.run_dir, workdir, mode=mode)
    sizes = spec["bytes"]
    print(
        f"int8 export ({spec['mode']}) written to {output}: {sizes['int8']:,} bytes, "
        f"{sizes['int8'] / sizes['fp32']:.1%} of the FP32 weights ({sizes['fp32']:,} bytes)"
    )
    print(f"use it as a run folder: foxhunt predict {output} --parquet-file FILE")
    return 0


def check_opset(opset: int | None) -> None:
    """Up front: torch's exporter printed a traceback for --opset 30, then wrote opset 18."""
    from foxhunt.errors import ConfigError
    from foxhunt.exports.onnx import OPSETS

    if opset is not None and opset not in OPSETS:
        raise ConfigError(
            f"--opset {opset}: the ONNX exporter writes opsets {OPSETS.start} to "
            f"{OPSETS.stop - 1}; choose one of those"
        )


def check_export_output(output: Path, *, kind: str, run_dir: Path, overwrite: bool) -> None:
    """An export folder is new, empty, or an export: of this kind and run, or any export
    with --overwrite. `--output OTHER_RUN` once replaced that run's config.json, and an FP32
    ONNX export silently replaced the int8 one in RUN/onnx-int8 (predict then served FP32)."""
    from foxhunt.errors import ConfigError
    from foxhunt.runs import EXPORT_DIRS, check_output_file, check_output_path

    check_output_path(output, "--output")
    # RUN/int8, RUN/onnx[-int8] are the export's own place; above them nothing foxhunt wrote
    own = output.name in EXPORT_DIRS.values()
    check_output_file(output.parent if own else output, "--output")
    if not output.is_dir() or not any(output.iterdir()):
        return
    held, source = held_export(output)
    if held is None:
        entries = sorted(p.name for p in output.iterdir())[:5]
        wanted = "an ONNX export" if kind.startswith("onnx") else "an int8 export"
        raise ConfigError(
            f"--output {output} holds {entries}, not {wanted}; an export replaces its folder's "
            "files: choose a new or empty folder"
        )
    if (held, source) != (kind, _source(run_dir)) and not overwrite:
        raise ConfigError(
            f"--output {output} holds the {held} export of {source}; pass --overwrite to "
            f"replace it with the {kind} export of {run_dir}, or choose another --output"
        )


def held_export(folder: Path) -> tuple[str | None, str | None]:
    """(kind, source run) of the export in `folder`: "qat" or "dynamic" (int8), "onnx" or
    "onnx-int8"; ("unreadable", None) for a damaged one, (None, None) for no export."""
    from foxhunt.errors import FoxhuntError
    from foxhunt.runs.files import EXPORT_FILE, ONNX_SPEC_FILE, is_export, is_onnx_export
    from foxhunt.storage.bounded import read_json_bounded

    if not (is_export(folder) or is_onnx_export(folder)):
        return None, None
    try:
        spec = read_json_bounded(folder / (EXPORT_FILE if is_export(folder) else ONNX_SPEC_FILE))
    except (FoxhuntError, OSError):
        return "unreadable", None
    if not isinstance(spec, dict):
        return "unreadable", None
    kind = spec.get("mode") if is_export(folder) else f"onnx-{spec.get('precision')}"
    kind = {"onnx-fp32": "onnx", "onnx-int8": "onnx-int8"}.get(str(kind), kind)
    source = spec.get("source")
    return str(kind), _source(Path(source)) if isinstance(source, str) else None


def check_calibration_bars(run_dir: Path) -> None:
    """An FP32 run's int8 scales are calibrated on its training bars, read again from the
    path config.json names: a file changed since was used without a word."""
    import logging

    from foxhunt.errors import DataError
    from foxhunt.runs import read_identity, read_qat_state, read_run_config
    from foxhunt.runs.files import is_export, is_onnx_export
    from foxhunt.runs.identity import fingerprint

    if is_export(run_dir) or is_onnx_export(run_dir) or read_qat_state(run_dir) is not None:
        return  # the export refuses an export; a QAT run's scales are its own: no bars read
    path = read_run_config(run_dir).data.path
    identity = read_identity(run_dir)
    if path is None or not Path(path).exists():
        return  # the export says what is missing
    if identity is None:
        logging.getLogger("foxhunt.export").warning(
            "%s has no identity.json (saved before runs had one): the calibration bars %s "
            "cannot be checked against those it was trained on",
            run_dir,
            path,
        )
        return
    if fingerprint(Path(path)) != identity["data"]:
        raise DataError(
            f"{path} is not the data {run_dir} was trained on (its size or content changed): "
            "calibrating the int8 export on it would give scales for other bars; put the "
            "training bars back at that path, or train with --qat"
        )


def _source(run_dir: Path) -> str:
    return str(Path(run_dir).resolve())


@contextmanager
def staged(output: Path) -> Iterator[Path]:
    """A sibling folder to write the export into, swapped in once complete: a failed or
    killed export leaves the earlier one in `output` as it was."""
    import shutil
    import uuid

    from foxhunt.storage.atomic import fsync_dir

    tag = uuid.uuid4().hex[:8]  # the export makes the folder (and its parents) once it writes
    staging = output.parent / f".{output.name}.new-{tag}"
    try:
        yield staging
        old = output.parent / f".{output.name}.old-{tag}"
        fsync_dir(staging)
        if output.exists():
            output.rename(old)
        staging.rename(output)
        fsync_dir(output.parent)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _onnx(args: Any, workdir: Path, output: Path, *, int8: bool) -> int:
    from foxhunt.exports.onnx import DEFAULT_OPSET, export_onnx
    from foxhunt.exports.onnx_int8 import export_onnx_int8

    opset = args.opset or DEFAULT_OPSET
    if int8:
        check_calibration_bars(args.run_dir)
        spec = export_onnx_int8(args.run_dir, workdir, opset=opset)
        how = spec["quantization"]["method"]
        what = f"int8 QDQ from {'the QAT scales' if how == 'qat' else 'calibration'}"
    else:
        spec = export_onnx(args.run_dir, workdir, opset=opset)
        what = "FP32"
    inputs = ", ".join(i["name"] for i in spec["inputs"])
    print(f"ONNX export ({what}, opset {spec['opset']}) written to {output}: inputs {inputs}")
    print(f"use it as a run folder: foxhunt predict {output} --parquet-file FILE")
    return 0
