"""`foxhunt export`: an int8 or ONNX model folder that `predict` and `evaluate` take as a run folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write an int8 CPU model or an ONNX model of a trained run",
        description="Write an int8 or ONNX export of RUN_DIR: pass the export folder to "
        "`foxhunt predict` / `foxhunt evaluate` in place of the run folder.",
    )
    p.add_argument("run_dir", type=Path, help="folder of a trained run")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--int8",
        dest="mode",
        action="store_const",
        const="qat",
        help="convert a QAT run (foxhunt train --qat) with its frozen scales",
    )
    mode.add_argument(
        "--dynamic",
        dest="mode",
        action="store_const",
        const="dynamic",
        help="post-training dynamic int8 of an FP32 run (for comparison)",
    )
    mode.add_argument(
        "--onnx",
        dest="mode",
        action="store_const",
        const="onnx",
        help="FP32 ONNX model of an FP32 run, run by ONNX Runtime (docs/export.md)",
    )
    p.add_argument("--opset", type=int, default=None, help="ONNX opset of --onnx (default 18)")
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        help="export folder (default: RUN_DIR/int8[-dynamic] or RUN_DIR/onnx)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from foxhunt.errors import FoxhuntError
    from foxhunt.exports.int8 import export_run
    from foxhunt.runs import EXPORT_DIRS

    output = args.output or args.run_dir / EXPORT_DIRS[args.mode]
    check_export_output(output, args.mode)
    if args.mode == "onnx":
        return _onnx(args, output)
    if args.opset is not None:
        raise FoxhuntError("--opset goes with --onnx")
    spec = export_run(args.run_dir, output, mode=args.mode)
    sizes = spec["bytes"]
    print(
        f"int8 export ({spec['mode']}) written to {output}: {sizes['int8']:,} bytes, "
        f"{sizes['int8'] / sizes['fp32']:.1%} of the FP32 weights ({sizes['fp32']:,} bytes)"
    )
    print(f"use it as a run folder: foxhunt predict {output} --parquet-file FILE")
    return 0


def check_export_output(output: Path, mode: str) -> None:
    """An export folder is new, empty or an export of the same kind: `--output OTHER_RUN`
    replaced that run's config.json and made it serve this run's int8 model, exit 0."""
    from foxhunt.errors import ConfigError
    from foxhunt.runs import EXPORT_DIRS, check_output_file, check_output_path
    from foxhunt.runs.files import is_export, is_onnx_export

    check_output_path(output, "--output")
    # RUN/int8, RUN/onnx are the export's own place; above them nothing foxhunt wrote
    own = output.name in EXPORT_DIRS.values()
    check_output_file(output.parent if own else output, "--output")
    if not output.is_dir() or not any(output.iterdir()):
        return
    same_kind = is_onnx_export(output) if mode == "onnx" else is_export(output)
    if not same_kind:
        held = sorted(p.name for p in output.iterdir())[:5]
        kind = "an ONNX export" if mode == "onnx" else "an int8 export"
        raise ConfigError(
            f"--output {output} holds {held}, not {kind}; an export replaces its folder's "
            "files: choose a new or empty folder"
        )


def _onnx(args: argparse.Namespace, output: Path) -> int:
    from foxhunt.exports.onnx import DEFAULT_OPSET, export_onnx

    spec = export_onnx(args.run_dir, output, opset=args.opset or DEFAULT_OPSET)
    inputs = ", ".join(i["name"] for i in spec["inputs"])
    print(f"ONNX export (FP32, opset {spec['opset']}) written to {output}: inputs {inputs}")
    print(f"use it as a run folder: foxhunt predict {output} --parquet-file FILE")
    return 0
