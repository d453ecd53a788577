"""benchmarks/gpu_check.py's report as markdown: the tables to paste into docs/memory.md and
docs/performance.md, each with what it ran on."""

from __future__ import annotations

from typing import Any

MiB = 1 << 20


def _cell(value: object) -> str:
    return str(value).replace("|", "/")


def _memory(section: dict[str, Any]) -> list[str]:
    modes = section.get("modes", [])
    if not modes:
        return []
    lines = ["", f"Memory under {section['limit_gb']:g} GB ({section['limit']})."]
    if section.get("data"):
        lines.append(f"Data: {_cell(section['data'])}.")
    lines += [
        "",
        "| batch | mode | under the limit | peak MiB | step ms | time / plain |",
        "| ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for r in modes:
        peak = "OOM" if r["oom"] else f"{r['peak_bytes'] / MiB:.1f}"
        step = "" if r["step_ms"] is None else f"{r['step_ms']:.1f}"
        ratio = "" if r["time_ratio"] is None else f"{r['time_ratio']:.2f}"
        fits = "yes" if r["fits"] else "no"
        lines.append(f"| {r['batch_size']} | {r['mode']} | {fits} | {peak} | {step} | {ratio} |")
    return lines


def _amp(section: dict[str, Any]) -> list[str]:
    if "fp32_step_ms" not in section:
        return []
    s = section
    return [
        "",
        f"fp32 vs bf16 autocast, batch {s['batch_size']}, {s['steps']} steps "
        f"({s['timed_steps']} timed); data: {_cell(s['data'])}.",
        "",
        "| precision | median step ms | mean loss, last steps | first gradients' cosine |",
        "| --- | ---: | ---: | ---: |",
        f"| fp32 | {s['fp32_step_ms']:.1f} | {s['tail_mean_loss']['fp32']:.5f} | |",
        f"| bf16 autocast | {s['bf16_step_ms']:.1f} | {s['tail_mean_loss']['bf16']:.5f} "
        f"| {s['first_gradient_cosine']:.4f} |",
    ]


def _throughput(section: dict[str, Any]) -> list[str]:
    dle = section.get("dle_electricity")
    if not dle:
        return []
    c = dle["config"]
    lines = [
        "",
        f"Training throughput at NVIDIA's TFT electricity config (hidden {c['hidden_size']}, "
        f"{c['attention_heads']} heads, lookback {c['lookback']}, horizon {c['horizon']}); "
        f"NVIDIA: {dle['nvidia']}.",
        "",
        "| precision | batch | step ms | samples/s | NVIDIA A100 items/s | ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in dle["rows"]:
        if r["status"] != "ok":
            lines.append(f"| {r['how']} | {r['batch_size']} | {r['status']} | | | |")
            continue
        lines.append(
            f"| {r['how']} | {r['batch_size']} | {r['step_ms']:.1f} | {r['samples_per_s']:.0f} "
            f"| {r['nvidia_a100_items_per_s']:.0f} | {r['vs_nvidia_a100']:.2f} |"
        )
    ref = section["reference"]
    if "error" in ref:
        return [*lines, "", f"foxhunt vs pytorch-forecasting: {_cell(ref['error'])}."]
    shape = ref["shape"]
    lines += [
        "",
        f"foxhunt vs pytorch-forecasting, fp32, reference shape (batch {shape['batch_size']}, "
        f"hidden {shape['hidden_size']}, lookback {shape['lookback']}, horizon "
        f"{shape['horizon']}, {shape['num_static']} static / {shape['num_observed']} observed / "
        f"{shape['num_known']} known):" + (f" {ref['pf_missing']}." if ref["pf_missing"] else ""),
        "",
        "| library | step ms | samples/s |",
        "| --- | ---: | ---: |",
    ]
    for name, r in ref["libraries"].items():
        lines.append(f"| {name} | {r['step_ms']:.1f} | {r['samples_per_s']:.0f} |")
    return lines


def _readings(section: dict[str, Any]) -> list[str]:
    r = section.get("readings")
    if not r:
        return []
    return ["", f"Memory profiler vs other readings: {_cell(r['summary'])}."]


def to_markdown(report: dict[str, Any]) -> str:
    """A summary table of the sections, then each section's own table."""
    lines = [
        f"GPU check on {report['device_name']} ({report['device']}), torch {report['torch']}, "
        f"foxhunt {report['commit']}, {report['started_utc']}"
        + (" (dry run: CPU, tiny sizes)" if report["dry_run"] else ""),
    ]
    if report.get("command"):
        lines.append(f"Command: `{report['command']}`")
    lines += [
        "",
        "| section | status | seconds | result |",
        "| --- | --- | ---: | --- |",
    ]
    sections = report["sections"]
    for name, s in sections.items():
        lines.append(
            f"| {name} | {s['status']} | {s.get('seconds', 0):.1f} | {_cell(s.get('summary', ''))} |"
        )
    lines += _memory(sections.get("memory_limit", {}))
    lines += _amp(sections.get("amp_bf16", {}))
    lines += _throughput(sections.get("throughput", {}))
    lines += _readings(sections.get("profiler", {}))
    return "\n".join(lines) + "\n"
