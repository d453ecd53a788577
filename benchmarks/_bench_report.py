"""The report of benchmarks/throughput.py: its fields, the machine and source it was measured
on, and its Markdown rendering."""

from __future__ import annotations

import math
import os
import platform
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from _bench_measure import AccuracyResult, InferenceResult, LoaderResult
from _bench_rounds import EntryResult, format_entries
from foxhunt.model import grn_cells


@dataclass(frozen=True, kw_only=True)
class LibraryResult:
    parameters: int
    step_s: list[float]
    """Median step seconds of each repeat."""
    median_step_s: float
    """Median over repeats of the per-repeat median."""
    samples_per_s: float
    busy_cores: list[float]
    """CPU seconds per wall second of each repeat's timed steps (ideal: the thread count;
    lower means other processes took the cores)."""
    system_share: list[float]
    """Share of that CPU time spent in the kernel (page faults of fresh allocations)."""
    other_cores: list[float | None]
    """Most cores other processes kept busy during any timed step of each repeat."""
    saved_for_backward_bytes: int
    inference: InferenceResult | None = None


@dataclass(frozen=True, kw_only=True)
class Report:
    config: dict[str, Any]
    machine: dict[str, Any]
    foxhunt: LibraryResult
    pf: LibraryResult | None
    pf_missing: str | None
    ratios: list[float]
    """foxhunt samples/s over pf samples/s, per repeat."""
    median_ratio: float | None
    loader: LoaderResult | None
    loader_to_train_ratio: float | None
    """Loader windows/s over foxhunt's training samples/s."""
    accuracy: AccuracyResult | None
    profile: str | None = None
    entries: list[EntryResult] = field(default_factory=list)
    """Every timed row of the interleaved rounds (shapes, variants, thread counts)."""
    sgemm_gflops: list[float] = field(default_factory=list)
    """Same-run fp32 sgemm GFLOP/s, one per round."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def source_state() -> str | None:
    """The checkout's commit, with "+dirty" when foxhunt's model files differ from it."""
    repo = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "src/foxhunt/model")
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def machine_info(threads: int) -> dict[str, Any]:
    return {
        "foxhunt_source": source_state(),
        "fused_cpu_kernel": grn_cells.load() is not None,
        "cpu_count": os.cpu_count(),
        "torch_threads": threads,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
        "loadavg_start": list(os.getloadavg()),
    }


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None or math.isnan(value) else format(value, spec)


def format_report(report: Report) -> str:
    """The report as a Markdown table plus notes."""
    fox, pf = report.foxhunt, report.pf
    mib = 2**20

    def row(label: str, pf_value: str, fox_value: str) -> str:
        return f"| {label} | {pf_value} | {fox_value} |"

    def inf(result: LibraryResult | None) -> tuple[str, str]:
        if result is None or result.inference is None:
            return "n/a", "n/a"
        i = result.inference

        def mark(text: str, others: float | None) -> str:
            return text + (" *" if others is not None and others > quiet else "")

        return (
            mark(_fmt(i.latency_ms, ".2f"), i.other_cores_latency),
            mark(_fmt(i.throughput_windows_per_s, ",.0f"), i.other_cores_throughput),
        )

    quiet = report.config["quiet_cores"]
    pf_lat, pf_thr = inf(pf)
    fox_lat, fox_thr = inf(fox)
    shape = report.config["shape"]
    lines = [
        f"batch {shape['batch_size']}, lookback {shape['lookback']}, horizon {shape['horizon']}, "
        f"hidden {shape['hidden_size']}, per-variable {shape['variable_hidden_size']}, "
        f"{shape['attention_heads']} heads, {len(shape['quantiles'])} quantiles, "
        f"{shape['num_static']} static / {shape['num_observed'] + shape['num_known']} past / "
        f"{shape['num_known']} future variables; {report.machine['torch_threads']} threads, "
        f"{report.config['repeats']} repeats x {report.config['steps']} timed steps",
        "",
        "| | pytorch-forecasting | foxhunt |",
        "| --- | ---: | ---: |",
        row(
            "parameters",
            f"{pf.parameters:,}" if pf else "n/a",
            f"{fox.parameters:,}",
        ),
        row(
            "training step, s (median)",
            _fmt(pf.median_step_s if pf else None, ".3f"),
            _fmt(fox.median_step_s, ".3f"),
        ),
        row(
            "training samples/s",
            _fmt(pf.samples_per_s if pf else None, ".1f"),
            _fmt(fox.samples_per_s, ".1f"),
        ),
        row(
            "saved for backward, MiB",
            _fmt(pf.saved_for_backward_bytes / mib if pf else None, ".1f"),
            _fmt(fox.saved_for_backward_bytes / mib, ".1f"),
        ),
        row("inference latency, batch 1, ms", pf_lat, fox_lat),
        row(f"inference windows/s, batch {report.config['inference_batch']}", pf_thr, fox_thr),
        "",
    ]
    if any(" *" in cell for cell in (pf_lat, pf_thr, fox_lat, fox_thr)):
        lines.append(f"* other processes kept more than {quiet} cores busy during this measurement")
    if report.median_ratio is not None:
        per = ", ".join(f"{r:.2f}" for r in report.ratios)
        lines.append(f"foxhunt / pf training samples/s: median {report.median_ratio:.2f}x ({per})")
    if report.pf_missing:
        lines.append(report.pf_missing)
    loader = report.loader
    if loader is not None:
        if loader.windows_per_s is None:
            lines.append(f"loader: not measured ({loader.error})")
        else:
            lines.append(
                f"loader: {loader.windows_per_s:,.0f} windows/s over {loader.windows:,} windows "
                f"(prepare_data {loader.prepare_s:.1f} s); "
                f"{_fmt(report.loader_to_train_ratio, '.0f')}x foxhunt's training samples/s"
            )
    acc = report.accuracy
    if acc is not None:
        names = sorted(acc.eval_loss)
        lines.append(
            f"accuracy ({acc.steps} steps, small shape; pinball loss, foxhunt's scale; "
            f"zero forecast {acc.zero_forecast_loss:.4f}, oracle {acc.oracle_loss:.4f}):"
        )
        for name in names:
            lines.append(
                f"  {name}: train {acc.train_loss_first[name]:.4f} -> "
                f"{acc.train_loss_last[name]:.4f}, held-out {acc.eval_loss[name]:.4f} "
                f"({acc.seconds[name]:.1f} s)"
            )
    for name, result in (("pytorch-forecasting", pf), ("foxhunt", fox)):
        if result is None:
            continue
        own = ", ".join(f"{b:.2f}" for b in result.busy_cores)
        others = ", ".join("n/a" if o is None else f"{o:.2f}" for o in result.other_cores)
        lines.append(
            f"{name}, per repeat: own busy cores {own}; "
            f"most cores used by other processes in one step {others}"
        )
    start, end = report.machine["loadavg_start"], report.machine.get("loadavg_end")
    load = f"load average (1/5/15 min) at start {start[0]:.2f}/{start[1]:.2f}/{start[2]:.2f}"
    if end:
        load += f", at end {end[0]:.2f}/{end[1]:.2f}/{end[2]:.2f}"
    lines.append(load)
    lines.append(
        f"foxhunt source: {report.machine.get('foxhunt_source') or 'unknown'}; fused CPU kernel "
        f"{'on' if report.machine.get('fused_cpu_kernel') else 'OFF (ATen path)'}; "
        f"torch {report.machine['torch']}, {report.machine['cpu_count']} CPUs"
    )
    background = report.machine.get("background_busy_cores") or []
    if any(b is not None for b in background):
        lines.append(
            "cores busy with other processes just before each repeat: "
            + ", ".join("n/a" if b is None else f"{b:.2f}" for b in background)
            + f"; repeats discarded as disturbed: {report.machine.get('repeats_discarded', 0)}"
        )
    lines += format_entries(
        report.entries, report.sgemm_gflops, bool(report.config.get("contention"))
    )
    if report.profile:
        lines += ["", "foxhunt training step, top operators:", report.profile]
    return "\n".join(lines)
