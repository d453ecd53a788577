"""One int8 Linear layer: FP32 vs torch.ao's converted layer vs foxhunt's int8 kernel.

    .venv/bin/python benchmarks/int8_linear.py [--in-features 64] [--out-features 128]
        [--rows 1 72 8192] [--threads 1]

Times (median of interleaved calls) ``F.linear`` in FP32, torch.ao's
``Quantize -> nnq.Linear -> DeQuantize`` (oneDNN engine, as ``convert`` makes it) and
foxhunt's kernel (``quant/kernel.py``, the build this CPU gets; ``FOXHUNT_CPU_ISA=avx2``
for the AVX2 path) on the same random weights and inputs, and prints the ratios. 72 rows
is one window of the default model (lookback 64 + horizon 8).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import torch
import torch.ao.nn.quantized as nnq
import torch.ao.quantization as tq
import torch.nn.functional as F
from torch import Tensor, nn

from foxhunt.quant.kernel import Int8Linear, available
from foxhunt.quant.toolkit import engine, quiet


def converted_linear(n: int, k: int) -> tuple[tq.QuantWrapper, Tensor, Tensor]:
    """A converted int8 Linear (static scales) and the float weight and bias it came from."""
    w, b = torch.randn(n, k) * 0.1, torch.randn(n)
    with quiet(), engine("onednn"):
        scales = (w.abs().amax(dim=1) / 127).double()
        zeros = torch.zeros(n, dtype=torch.long)
        q = torch.quantize_per_channel(w, scales, zeros, 0, torch.qint8)
        linear = nnq.Linear(k, n)
        linear.set_weight_bias(q, b)
        linear.scale, linear.zero_point = 0.05, 120
        wrapper = tq.QuantWrapper(nn.Linear(k, n))
        wrapper.quant = nnq.Quantize(0.03, 128, torch.quint8)  # type: ignore[assignment]
        wrapper.module = linear
        wrapper.dequant = nnq.DeQuantize()  # type: ignore[assignment]
    return wrapper.eval(), w, b


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
    wrapper, w, b = converted_linear(args.out_features, args.in_features)
    ours = Int8Linear.from_converted(wrapper, kernel)
    print(
        f"K={args.in_features} N={args.out_features}, {args.threads} thread(s), "
        f"kernel {kernel.simd()}, torch {torch.__version__}"
    )
    print("| rows | FP32 | torch.ao int8 | foxhunt int8 | FP32 / foxhunt | torch.ao / foxhunt |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    with torch.inference_mode():
        for rows in args.rows:
            x = torch.randn(rows, args.in_features)
            repeats = max(20, min(2000, 2_000_000 // (rows * args.out_features)))
            calls: dict[str, Callable[[], object]] = {
                "fp32": partial(F.linear, x, w, b),
                "ao": partial(wrapper, x),
                "ours": partial(ours, x),
            }
            t = median_us(calls, repeats)
            print(
                f"| {rows} | {t['fp32']:.1f} us | {t['ao']:.1f} us | {t['ours']:.1f} us "
                f"| {t['fp32'] / t['ours']:.2f}x | {t['ao'] / t['ours']:.2f}x |"
            )


if __name__ == "__main__":
    main()
