"""The memory benchmark's report as a text table; ratios are to the plain ("none") mode."""

from __future__ import annotations

from foxhunt.bench.memory import BenchReport, ModeResult
from foxhunt.memory.saved import MiB

COLUMNS = (
    f"{'saved MiB':>10}{'kept MiB':>10}{'saving':>8}"
    f"{'peak MiB':>10}{'peak/plain':>11}{'step ms':>9}{'time x':>8}"
)


def format_table(report: BenchReport) -> str:
    cfg = report.config
    limit = f", CUDA capped at {report.memory_limit_gb:g} GB" if report.memory_limit_gb else ""
    lines = [
        f"{report.preset}: batch {report.batch_size}, hidden {cfg['hidden_size']}, variable "
        f"{cfg['variable_hidden_size']}, lookback {cfg['lookback']}, horizon {cfg['horizon']}, "
        f"{cfg['num_static']} static / {cfg['num_past']} past / {cfg['num_future']} future, "
        f"{len(cfg['quantiles'])} quantiles",
        f"{report.device}{limit}, {report.threads} threads, torch {report.torch_version}",
        "saved = bytes saved for backward (kept = inputs checkpoint holds for recompute); "
        "saving = 1 - saved / plain saved",
        "",
    ]
    width = max([16, *(len(r.mode) + 2 for r in report.results)])
    lines.append(f"{'mode':<{width}}{COLUMNS}")
    plain = next((r for r in report.results if r.mode == "none"), None)
    lines += [_row(r, plain, width) for r in report.results]
    full = next((r for r in report.results if r.mode == "full" and r.saved_by_owner), None)
    if full is not None:
        owners = sorted(full.saved_by_owner.items(), key=lambda kv: -kv[1])
        lines += ["", "still saved under full checkpointing (MiB):"]
        lines += [f"  {owner:<32}{nbytes / MiB:>9.3f}" for owner, nbytes in owners]
    return "\n".join(lines)


def _row(r: ModeResult, plain: ModeResult | None, width: int) -> str:
    if r.oom:
        return f"{r.mode:<{width}}{'out of memory (CUDA)':>28}"
    saving = peak_ratio = None
    if plain is not None and plain.saved_bytes and r.saved_bytes is not None:
        saving = 1.0 - r.saved_bytes / plain.saved_bytes
    if plain is not None and plain.peak_bytes and r.peak_bytes is not None:
        peak_ratio = r.peak_bytes / plain.peak_bytes
    return (
        f"{r.mode:<{width}}{_num(r.saved_bytes, MiB, 10, 2)}{_num(r.kept_input_bytes, MiB, 10, 2)}"
        f"{_pct(saving):>8}{_num(r.peak_bytes, MiB, 10, 2)}{_num(peak_ratio, 1, 11, 3)}"
        f"{_num(r.step_ms, 1, 9, 0)}{_num(r.time_ratio, 1, 8, 2)}"
    )


def _num(value: float | None, unit: float, width: int, digits: int) -> str:
    return f"{'-':>{width}}" if value is None else f"{value / unit:>{width}.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"
