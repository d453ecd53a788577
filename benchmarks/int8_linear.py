"""One int8 Linear layer: FP32 vs the converted layer's reference forward vs foxhunt's kernel.

    .venv/bin/python benchmarks/int8_linear.py [--in-features 64] [--out-features 128]
        [--rows 1 72 8192] [--threads 1]

Times (median of interleaved calls) ``F.linear`` in FP32, ``QuantizedLinear``'s own forward
(what ``convert`` makes of a QAT Linear: fake quantization of the input and output and a
float32 GEMM on the int8 weights; what runs where the kernel does not build) and foxhunt's
kernel (``quant/kernel.py``, the build this CPU gets; ``FOXHUNT_CPU_ISA=avx2`` for the AVX2
path) on the same random weights and inputs, and prints the ratios. 72 rows is one window
of the default model (lookback 64 + horizon 8).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor

from foxhunt.quant.kernel import Int8Linear, available
from foxhunt.quant.linear import QuantizedLinear


def converted_linear(n: int, k: int) -> tuple[QuantizedLinear, Tensor, Tensor]:
    """A converted int8 Linear (static grids) and the float weight and bias it came from."""
    w, b = torch.randn(n, k) * 0.1, torch.randn(n)
    scale = w.abs().amax(dim=1) / 127
    layer = QuantizedLinear(k, n, bias=True, static=True)
    layer.set_weight(torch.round(w / scale[:, None]).to(torch.int8), scale, b)
    layer.input_scale.fill_(0.03)
    layer.input_zero_point.fill_(128)
    layer.output_scale.fill_(0.05)
    layer.output_zero_point.fill_(120)
    return layer.eval(), w, b


def median_us(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()  # warm-up
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return {name: 1e6 * statistics.median(t) for name, t in times.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--in-features", type=int, default=64)
    p.add_argument("--out-features", type=int, default=128)
    p.add_argument("--rows", type=int, nargs="+", default=[1, 72, 8192])
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    kernel = available()
    if kernel is None:
        raise SystemExit("foxhunt's int8 kernel is not available here (see docs/QAT_GUIDE.md)")
    torch.manual_seed(0)
    reference, w, b = converted_linear(args.out_features, args.in_features)
    ours = Int8Linear.from_converted(reference, kernel)
    print(
        f"K={args.in_features} N={args.out_features}, {args.threads} thread(s), "
        f"kernel {kernel.simd()}, torch {torch.__version__}"
    )
    print("| rows | FP32 | reference int8 | foxhunt int8 | FP32 / foxhunt | reference / foxhunt |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    with torch.inference_mode():
        for rows in args.rows:
            x = torch.randn(rows, args.in_features)
            repeats = max(20, min(2000, 2_000_000 // (rows * args.out_features)))
            calls: dict[str, Callable[[], object]] = {
                "fp32": partial(F.linear, x, w, b),
                "reference": partial(reference, x),
                "ours": partial(ours, x),
            }
            t = median_us(calls, repeats)
            print(
                f"| {rows} | {t['fp32']:.1f} us | {t['reference']:.1f} us | {t['ours']:.1f} us "
                f"| {t['fp32'] / t['ours']:.2f}x | {t['reference'] / t['ours']:.2f}x |"
            )


if __name__ == "__main__":
    main()
