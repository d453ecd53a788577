"""Issue 40's keep-or-delete table: foxhunt's two C++ kernels against the maintained routes.

    .venv/bin/python benchmarks/kernel_routes.py [--contention] [--threads 1] [--rounds 7]
        [--grn-shapes reference tft-225] [--unit vsn|model] [--batch N]
        [--modes inference training]
        [--int8-shapes 64x64 64x128 256x256 256x512] [--rows 1 72 8192]
        [--routes ROUTE ...] [--target-ms 100]

Two kernels, each in its cells (a shape and a mode), every route of every cell timed in ONE
interleaved run: each round times every route in turn (odd rounds in reverse order), so a
change in the machine's load reaches all alike. Per route: the median over rounds of a
call's median time, the rounds' range, the median (and range) of its per-round ratio to the
kernel's route, the first call's seconds (compile, export or quantization included: its own
column, not in the timings; a cold compile: inductor's caches are off unless --warm-cache) and its error against the cell's reference, so that no route is
timed doing something else.

- GRN (``foxhunt::grn_cells``, _routes_grn.py): the past variable selection network
  (``--unit model``: the whole TFT), inference (no_grad forward) and training (forward, a
  scalar loss, backward), at the ``--grn-shapes`` (``reference``: the CPU reference, batch 32;
  ``tft-225``: hidden 256, lookback 128, batch 32; ``tiny``: a smoke run's). Routes:
  eager-kernel, eager-aten, compile-aten, compile-kernel; error against eager-aten (the Python
  math).
- int8 (``foxhunt::int8_linear``, _routes_int8.py): one Linear at the model's int8 layer
  shapes (``--int8-shapes``: the reference's 64x64 and 64x128, TFT-225's 256x256 and
  256x512) and ``--rows`` (1: one forecast row; 72: a default window; 8192: a large batch).
  Routes: fp32, fox-static, fox-dynamic, torchao-da8w8, torchao-w8, pt2e-static,
  pt2e-dynamic, ort-static; error against FP32 ``F.linear`` (int8 rounding is expected).

Then the 15% rule (docs/export.md) per kernel: it stays only where it beats the best
maintained route by more than 15%, on both CPU kinds; this run measures only the CPU it is on.
``--contention`` starts one competing process (a torch matmul loop of
``--contention-threads`` threads, benchmarks/_bench_rounds.py's) for the whole run.

Optional packages: torchao (the torchao and PT2E routes: ``pip install 'foxhunt[bench]'``)
and onnx / onnxscript / onnxruntime (ort-static: ``pip install 'foxhunt[onnx]'``); a missing
one is one line and its routes are skipped.

Compiling at the full shapes is slow on 2 cores (compile-aten and compile-kernel training at
the reference: minutes each; an earlier whole-model attempt took 751 s) and compile-aten at
TFT-225 needs several GiB (skipped, saying so, where the estimate passes 80% of the memory
available): ``--routes`` picks routes, e.g. ``--routes eager-kernel eager-aten fp32
fox-static ...`` for a run without compiling.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import torch

# Run as a script or loaded by path (the tests): either way the sibling modules import by name.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from _routes_common import (  # noqa: E402
    Route,
    cpu_flags,
    environment,
    interleaved,
    load_line,
    machine_line,
    table,
    verdict,
)
from _routes_grn import MODES, grn_routes  # noqa: E402
from _routes_grn import ROUTES as GRN_ROUTES  # noqa: E402
from _routes_grn import SHAPES as GRN_SHAPES  # noqa: E402
from _routes_int8 import ROUTES as INT8_ROUTES  # noqa: E402
from _routes_int8 import int8_routes, parse_shape  # noqa: E402


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--target-ms", type=float, default=100.0, help="per route per round")
    p.add_argument("--grn-shapes", nargs="*", default=["reference", "tft-225"], choices=GRN_SHAPES)
    p.add_argument("--unit", choices=("vsn", "model"), default="vsn")
    p.add_argument("--batch", type=int, default=None, help="GRN batch (default: the preset's)")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES, help="GRN modes")
    p.add_argument("--int8-shapes", nargs="*", default=["64x64", "64x128", "256x256", "256x512"])
    p.add_argument("--rows", type=int, nargs="+", default=[1, 72, 8192])
    p.add_argument(
        "--routes", nargs="+", default=[*GRN_ROUTES, *INT8_ROUTES],
        choices=[*GRN_ROUTES, *INT8_ROUTES],
    )  # fmt: skip
    p.add_argument("--contention", action="store_true", help="one competing process throughout")
    p.add_argument("--contention-threads", type=int, default=1)
    p.add_argument(
        "--warm-cache", action="store_true", help="let inductor reuse its on-disk caches"
    )
    p.add_argument("--quiet-setup", action="store_true", help="no line per route while setting up")
    return p.parse_args(argv)


def compile_settings(warm_cache: bool) -> contextlib.ExitStack:
    """Many compiled variants of the same code (Linear.forward, the VSN's forward): a
    recompile limit hit must fail, never run a "compiled" route eagerly; dropout in compiled
    graphs draws with ATen's generator, as eager does (the GRN error check compares masks).
    Unless ``warm_cache``, inductor compiles into a new cache folder with its caches off:
    the first-call column is a cold compile, not an earlier run's cache."""
    import torch._dynamo.config as dynamo_config
    import torch._inductor.config as inductor_config

    stack = contextlib.ExitStack()
    if not warm_cache:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="kernel_routes_"))
        stack.enter_context(environment("TORCHINDUCTOR_CACHE_DIR", folder))
        stack.enter_context(inductor_config.patch(force_disable_caches=True))
    stack.enter_context(
        dynamo_config.patch(
            recompile_limit=512, accumulated_recompile_limit=4096, fail_on_recompile_limit_hit=True
        )
    )
    stack.enter_context(inductor_config.patch(fallback_random=True))
    return stack


def run(args: argparse.Namespace) -> list[Route]:
    flags = cpu_flags()
    print(machine_line(flags))
    print(load_line("start"))
    print(
        f"{args.threads} thread(s), {args.rounds} rounds, about {args.target_ms:.0f} ms per "
        f"route per round; competing process: "
        + (f"one, {args.contention_threads} thread(s)" if args.contention else "none started")
    )
    torch.set_num_threads(args.threads)
    say = (lambda line: None) if args.quiet_setup else print
    target = args.target_ms / 1e3
    grn: list[Route] = []
    grn_ref: dict[str, str] = {}
    if args.grn_shapes and set(args.routes) & set(GRN_ROUTES):
        grn, grn_ref = grn_routes(
            args.grn_shapes, args.unit, args.batch, args.routes, args.modes, target, say
        )
    int8: list[Route] = []
    int8_ref: dict[str, str] = {}
    if args.int8_shapes and set(args.routes) & set(INT8_ROUTES):
        shapes = [parse_shape(s) for s in args.int8_shapes]
        int8, int8_ref = int8_routes(
            shapes, args.rows, args.routes, flags, args.threads, target, say
        )
    routes = [*grn, *int8]
    start = time.perf_counter()
    interleaved(routes, args.rounds, say)
    print(f"\ninterleaved run: {len(routes)} routes, {time.perf_counter() - start:.0f} s")
    print()
    print("\n".join(table(routes, {**grn_ref, **int8_ref})))
    for title, part in (
        ("GRN kernel (grn_cells.cpp)", grn),
        ("int8 kernel (int8_linear.cpp)", int8),
    ):
        if part:
            print()
            print("\n".join(verdict(title, part, flags)))
    print()
    print(load_line("end"))
    return routes


def main(argv: list[str] | None = None) -> list[Route]:
    args = parse(argv)
    if args.contention:
        from _bench_rounds import Competitor

        context: contextlib.AbstractContextManager[object] = Competitor(args.contention_threads)
    else:
        context = contextlib.nullcontext()
    threads = torch.get_num_threads()
    try:
        with context, compile_settings(args.warm_cache):
            return run(args)
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
