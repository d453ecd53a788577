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
    p.add_argument(
        "--onnx",
        action="store_true",
        help="ONNX model run by ONNX Runtime (FP32; with --int8 int8 in QDQ form; docs/export.md)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--int8",
        dest="mode",
        action="store_const",
        const="qat",
        help="int8: convert a QAT run (foxhunt train --qat) with its frozen scales; with "
        "--onnx, a QAT run's scales or, for an FP32 run, scales calibrated on its training bars",
    )
    mode.add_argument(
        "--dynamic",
        dest="mode",
        action="store_const",
        const="dynamic",
        help="post-training dynamic int8 of an FP32 run (for comparison)",
    )
    p.add_argument("--opset", type=int, default=None, help="ONNX opset of --onnx (default 18)")
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        help="export folder (default: RUN_DIR/int8[-dynamic] or RUN_DIR/onnx[-int8])",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from foxhunt.errors import FoxhuntError
    from foxhunt.exports.int8 import export_run
    from foxhunt.runs import EXPORT_DIRS

    if args.onnx:
        if args.mode == "dynamic":
            raise FoxhuntError("--dynamic does not go with --onnx: use --onnx --int8")
        kind = "onnx-int8" if args.mode == "qat" else "onnx"
        return _onnx(args, args.output or args.run_dir / EXPORT_DIRS[kind], int8=kind != "onnx")
    if args.mode is None:
        raise FoxhuntError("say what to export: --int8, --dynamic or --onnx [--int8]")
    if args.opset is not None:
        raise FoxhuntError("--opset goes with --onnx")
    output = args.output or args.run_dir / EXPORT_DIRS[args.mode]
    spec = export_run(args.run_dir, output, mode=args.mode)
    sizes = spec["bytes"]
    print(
        f"int8 export ({spec['mode']}) written to {output}: {sizes['int8']:,} bytes, "
        f"{sizes['int8'] / sizes['fp32']:.1%} of the FP32 weights ({sizes['fp32']:,} bytes)"
    )
    print(f"use it as a run folder: foxhunt predict {output} --parquet-file FILE")
    return 0


def _onnx(args: argparse.Namespace, output: Path, *, int8: bool) -> int:
    from foxhunt.exports.onnx import DEFAULT_OPSET, export_onnx
    from foxhunt.exports.onnx_int8 import export_onnx_int8

    opset = args.opset or DEFAULT_OPSET
    if int8:
        spec = export_onnx_int8(args.run_dir, output, opset=opset)
        how = spec["quantization"]["method"]
        what = f"int8 QDQ from {'the QAT scales' if how == 'qat' else 'calibration'}"
    else:
        spec = export_onnx(args.run_dir, output, opset=opset)
        what = "FP32"
    inputs = ", ".join(i["name"] for i in spec["inputs"])
    print(f"ONNX export ({what}, opset {spec['opset']}) written to {output}: inputs {inputs}")
    print(f"use it as a run folder: foxhunt predict {output} --parquet-file FILE")
    return 0
