"""A self-contained HTML report (PNGs inline) and the PNGs beside it."""

from __future__ import annotations

import base64
import html
import io
import logging
from pathlib import Path

from matplotlib.figure import Figure

from foxhunt.jobs.train import JobResult
from foxhunt.report.collect import ReportData, collect, collect_from
from foxhunt.report.figures import FIGURES
from foxhunt.runs import REPORT_DIR
from foxhunt.storage import atomic_write_bytes
from foxhunt.task import results_table
from foxhunt.task.scoring import kept_initial

log = logging.getLogger("foxhunt.report")

#: panels that show the network's weights, not its forecasts
UNTRAINED_PANELS = ("importance", "attention")
CAPTIONS = {
    "loss": "Training and validation loss per epoch.",
    "forecasts": "Test-split forecasts one bar ahead: the outer quantile band, the median and "
    "the realized log return.",
    "importance": "Mean variable-selection weight of each input over the test windows (each "
    "network's weights sum to 1 per time step): the top inputs of each network, then its "
    "weight summed per feature group (inputs in brackets); metrics.json's importance ranks "
    "them all.",
    "attention": "Mean attention of each horizon step over the lookback and the horizon "
    "(causal: a step never attends to later steps).",
    "calibration": "Share of test targets at or below each quantile forecast; on the diagonal "
    "means calibrated.",
    "memory": "Memory and step time over the run, from the profiler.",
}


def png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def render(data: ReportData, images: dict[str, bytes]) -> str:
    metrics = data.metrics
    table = results_table(metrics, data.quantiles) if "test" in metrics else "(no metrics.json)"
    captions = dict(CAPTIONS)
    if kept_initial(metrics):  # say whose weights these panels show
        for name in UNTRAINED_PANELS:
            captions[name] = (
                f"Of the untrained network (the gate kept the initial weights). {captions[name]}"
            )
    sections = "\n".join(
        f"<h2>{name}</h2><p>{html.escape(captions[name])}</p>"
        f'<img alt="{name}" src="data:image/png;base64,{base64.b64encode(blob).decode()}">'
        for name, blob in images.items()
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>foxhunt report: {html.escape(data.run_dir.name)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;}}img{{max-width:100%;}}
pre{{background:#f6f6f6;padding:1em;overflow-x:auto;}}</style></head><body>
<h1>foxhunt run {html.escape(str(data.run_dir))}</h1>
<h2>Test metrics</h2><pre>{html.escape(table)}</pre>
{sections}
</body></html>
"""


def write_report(
    run_dir: Path, data_file: Path | None = None, *, job: JobResult | None = None
) -> Path:
    """Writes RUN_DIR/report/report.html and one PNG per figure; returns the HTML path.
    `job`: the result of the training job that just wrote RUN_DIR, whose model and data are
    used as they are (nothing is loaded or read again)."""
    if job is not None and job.model is not None and job.data is not None and job.model_config:
        data = collect_from(run_dir, job.model, job.data, job.model_config)
    else:
        data = collect(run_dir, data_file)
    out = run_dir / REPORT_DIR
    images = {}
    for name, make in FIGURES.items():
        images[name] = png(make(data))
        atomic_write_bytes(out / f"{name}.png", images[name])
    path = out / "report.html"
    atomic_write_bytes(path, render(data, images).encode())
    log.info("report written to %s", path)
    return path
