"""FP32 vs QAT-int8 vs post-training int8 on real ES bars: test loss, file size, CPU latency.

    .venv/bin/python benchmarks/quantization.py [--data ../shared/data/ES_FUT_60d_5min.parquet]
        [--epochs 4] [--max-steps-per-epoch 50] [--freeze-after 100] [--threads 1] [--json]

Trains an FP32 run and a QAT run (``foxhunt.jobs.train.train``, same seed and config),
exports the QAT run to int8 (``export --int8``) and the FP32 run with post-training dynamic
quantization (``export --dynamic``), scores the four models on the same test windows, and
times forward passes of one window and of a batch of 1024 windows with ``--threads``
threads, interleaving the models so that load on a shared machine hits them alike. The
int8 exports are timed as ``foxhunt predict`` loads them (foxhunt's int8 kernel where it
builds) and with their reference layers (``load_export(kernel=False)``: float32 math on the
int8 grids, what a CPU without the kernel runs), to show where the speed comes from. Prints the markdown table of docs/QAT_GUIDE.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from foxhunt import TFTBatch, TFTConfig
from foxhunt.data import DataConfig, prepare_data
from foxhunt.exports.int8 import export_run, load_export
from foxhunt.jobs.train import JobOptions, train
from foxhunt.quant import QATConfig
from foxhunt.quant.kernel import available as int8_kernel
from foxhunt.runs import INT8_WEIGHTS_FILE, WEIGHTS_FILE, RunConfig
from foxhunt.serving import load_run
from foxhunt.task import bp_per_unit, forecast_metrics
from foxhunt.training.config import TrainingConfig
from foxhunt.training.inference import predict_windows

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ES_FUT_60d_5min.parquet"


def run_config(args: argparse.Namespace) -> RunConfig:
    data = DataConfig(path=args.data, lookback=args.lookback, horizon=args.horizon)
    model = TFTConfig(
        hidden_size=args.hidden_size, variable_hidden_size=args.variable_hidden_size,
        attention_heads=4, dropout=0.1,
    )  # fmt: skip
    training = TrainingConfig(
        epochs=args.epochs, batch_size=64, lr=1e-3, patience=0, seed=args.seed, device="cpu",
        max_steps_per_epoch=args.max_steps_per_epoch,
    )  # fmt: skip
    return RunConfig(data=data, model=model, training=training)


def test_loss(folder: Path, config: RunConfig) -> float:
    """Mean test quantile loss (basis points) of the model a run or export folder loads."""
    loaded = load_run(folder)
    data = prepare_data(config.data, preprocessor=loaded.preprocessor)
    pred, target, _ = predict_windows(loaded.model, data.test, batch_size=512)
    assert target is not None
    scale = bp_per_unit(loaded.preprocessor)
    metrics = forecast_metrics(pred * scale, target * scale, loaded.config.model.quantiles)
    return float(metrics["mean_quantile_loss"])


def latency_ms(models: dict[str, nn.Module], batch: TFTBatch, repeats: int) -> dict[str, float]:
    """Median wall time of one forward pass per model, runs interleaved model by model."""
    times: dict[str, list[float]] = {name: [] for name in models}
    with torch.inference_mode():
        for model in models.values():  # warm-up: allocator, weight packing, first-call paths
            model(batch)
        for _ in range(repeats):
            for name, model in models.items():
                start = time.perf_counter()
                model(batch)
                times[name].append(time.perf_counter() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def benchmark(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    torch.set_num_threads(args.threads)
    config = run_config(args)
    started = time.perf_counter()
    runs = {"fp32": out / "fp32", "qat": out / "qat"}
    train(config, runs["fp32"], options=JobOptions(memory_log_every=10**9))
    qat = QATConfig(freeze_after=args.freeze_after)
    train(config, runs["qat"], options=JobOptions(memory_log_every=10**9, qat=qat))
    trained_s = time.perf_counter() - started
    folders = {
        "FP32": runs["fp32"],
        "QAT (fake-quant, training model)": runs["qat"],
        "QAT-int8 (export --int8)": out / "qat-int8",
        "PTQ-int8 (export --dynamic)": out / "ptq-int8",
    }
    grids = {  # the activation grid of each export
        export_run(runs["qat"], folders["QAT-int8 (export --int8)"], mode="qat")["activation_max"],
        export_run(runs["fp32"], folders["PTQ-int8 (export --dynamic)"], mode="dynamic")[
            "activation_max"
        ],
    }
    losses = {name: test_loss(folder, config) for name, folder in folders.items()}
    sizes = {
        "FP32": (runs["fp32"] / WEIGHTS_FILE).stat().st_size,
        "QAT-int8 (export --int8)": (folders["QAT-int8 (export --int8)"] / INT8_WEIGHTS_FILE)
        .stat()
        .st_size,
        "PTQ-int8 (export --dynamic)": (folders["PTQ-int8 (export --dynamic)"] / INT8_WEIGHTS_FILE)
        .stat()
        .st_size,
    }
    timed = {name: load_run(folders[name]).model for name in sizes}
    for name in ("QAT-int8 (export --int8)", "PTQ-int8 (export --dynamic)"):
        timed[f"{name.split(' (')[0]}, reference layers"] = load_export(
            folders[name], kernel=False
        ).model
    data = prepare_data(config.data, preprocessor=load_run(runs["fp32"]).preprocessor)
    latencies = {  # windows of the train split: the test split holds fewer than 1024
        "batch 1024": latency_ms(timed, data.train.__getitems__(list(range(1024))), args.repeats),
        "batch 1": latency_ms(timed, data.train[0], 40 * args.repeats),
    }
    kernel = int8_kernel()
    return {
        "config": config.to_dict() | {"qat": qat.to_dict()},
        "threads": args.threads,
        "load_average": os.getloadavg(),
        "activation_grid": ", ".join(f"0..{top}" for top in sorted(grids)),
        "int8_kernel": f"foxhunt ({kernel.simd()})" if kernel else "none: reference layers",
        "cpu": cpu_name(),
        "torch": torch.__version__,
        "train_seconds": round(trained_s, 1),
        "test_mean_quantile_loss_bp": losses,
        "file_bytes": sizes,
        "latency_ms": latencies,
    }


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def table(result: dict[str, Any]) -> str:
    losses, sizes = result["test_mean_quantile_loss_bp"], result["file_bytes"]
    big, one = result["latency_ms"]["batch 1024"], result["latency_ms"]["batch 1"]
    lines = [
        "| model | test mean QL (bp) | vs FP32 | weights file | vs FP32 | latency, batch 1024 "
        "| FP32 / it | latency, 1 window | FP32 / it |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def speed(name: str) -> list[str]:
        return [
            f"{big[name]:.0f} ms",
            f"{big['FP32'] / big[name]:.2f}x",
            f"{one[name]:.2f} ms",
            f"{one['FP32'] / one[name]:.2f}x",
        ]

    for name, loss in losses.items():
        row = [name, f"{loss:.4f}", f"{loss / losses['FP32'] - 1:+.2%}"]
        if name in sizes:
            row += [f"{sizes[name]:,} B", f"{sizes[name] / sizes['FP32']:.1%}", *speed(name)]
        else:
            row += ["(not a deployable file)", "", "", "", "", ""]
        lines.append("| " + " | ".join(row) + " |")
    for name in big:
        if name not in losses:  # the same export, timed with its reference layers
            lines.append("| " + " | ".join([name, "(same)", "", "(same)", "", *speed(name)]) + " |")
    load = ", ".join(f"{x:.1f}" for x in result["load_average"])
    lines.append(
        f"\n{result['cpu']}, {result['threads']} thread(s), activations "
        f"{result['activation_grid']}, "
        f"int8 kernel {result['int8_kernel']}, torch {result['torch']}, "
        f"load average {load}; training both runs took {result['train_seconds']:.0f} s."
    )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--lookback", type=int, default=64)
    p.add_argument("--horizon", type=int, default=8)
    p.add_argument("--hidden-size", type=int, default=64)
    p.add_argument("--variable-hidden-size", type=int, default=16)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--max-steps-per-epoch", type=int, default=50)
    p.add_argument("--freeze-after", type=int, default=100, help="QAT observer warm-up steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=9, help="timed passes of batch 1024 per model")
    p.add_argument("--output", type=Path, default=None, help="keep the runs here (default: temp)")
    p.add_argument("--json", action="store_true", help="print the raw result as JSON too")
    args = p.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"{args.data} not found: pass --data PATH to the ES bars (see README)")
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        result = benchmark(args, args.output or Path(tmp))
    print(table(result))
    if args.json:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
