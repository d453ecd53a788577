"""What a run writes about itself as it trains and ends: history.jsonl, baseline.json and
metrics.json, and their readers: a damaged file is named with its field, never plotted or
scored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from foxhunt.baselines import FittedBaselines
from foxhunt.errors import ConfigError
from foxhunt.migrations import BASELINE, EXTENDED_FITS
from foxhunt.runs.checks import RunFileError
from foxhunt.runs.files import BASELINE_FILE, HISTORY_FILE, METRICS_FILE
from foxhunt.storage import atomic_write_json
from foxhunt.storage.bounded import read_bytes_bounded, read_json_bounded

HISTORY_LIMIT = 256 << 20  # one line per epoch and memory event
# the numbers the report plots, per event
HISTORY_FIELDS = {
    "epoch": ("epoch", "train_loss", "val_loss"),
    "memory_step": ("step", "used_mb", "peak_mb"),
    "memory_epoch_end": ("used_mb",),
}


def append_history(run_dir: Path, record: dict[str, Any]) -> None:
    with (run_dir / HISTORY_FILE).open("a") as f:
        f.write(json.dumps(record) + "\n")


def clear_history(run_dir: Path) -> None:
    """A new run's history starts empty (a resumed run appends to its own)."""
    (run_dir / HISTORY_FILE).unlink(missing_ok=True)


def save_baseline_state(run_dir: Path, state: dict[str, Any]) -> None:
    """baseline.json, recording its format (foxhunt/migrations.py)."""
    atomic_write_json(run_dir / BASELINE_FILE, {**state, BASELINE.key: BASELINE.current})


def save_metrics(run_dir: Path, metrics: dict[str, Any]) -> None:
    atomic_write_json(run_dir / METRICS_FILE, metrics)


def read_metrics(path: Path, quantiles: tuple[float, ...]) -> dict[str, Any]:
    """metrics.json: a `test` block and a `baselines` mapping of blocks, each with every
    metric of every quantile, as numbers."""
    metrics = read_json_bounded(path)
    ok = isinstance(metrics, dict) and isinstance(metrics.get("test"), dict)
    baselines = metrics.get("baselines") if isinstance(metrics, dict) else None
    if (
        not ok
        or not isinstance(baselines, dict)
        or not all(isinstance(b, dict) for b in baselines.values())
    ):
        raise RunFileError(f"{path}: expected the sections test and baselines; the file is damaged")
    for name, block in {"test": metrics["test"], **baselines}.items():
        field = missing_metric(block, quantiles) or non_numeric_leaf(block)
        if field is not None:
            raise RunFileError(f"{path}: {name}.{field} is not a number; the file is damaged")
    if "differences" in metrics and (field := damaged_differences(metrics["differences"])):
        raise RunFileError(f"{path}: differences.{field} is not as written; the file is damaged")
    return dict(metrics)


def damaged_differences(differences: Any) -> str | None:
    """The first part of metrics.json's tests of difference (task/difference.py) the table
    cannot read: the reference's name, each DM p-value, the MCS members and p-values."""
    if not isinstance(differences, dict):
        return "(top level)"
    if not isinstance(differences.get("reference"), str):
        return "reference"
    dm, mcs = differences.get("dm"), differences.get("mcs")
    if not isinstance(dm, dict):
        return "dm"
    for name, pair in dm.items():
        if not isinstance(pair, dict) or not is_number(pair.get("pvalue")):
            return f"dm.{name}"
    if not isinstance(mcs, dict):
        return "mcs"
    included, pvalues = mcs.get("included"), mcs.get("pvalues")
    if not isinstance(included, list) or not all(isinstance(n, str) for n in included):
        return "mcs.included"
    if not isinstance(pvalues, dict) or not all(map(is_number, pvalues.values())):
        return "mcs.pvalues"
    return None


METRIC_KEYS = ("mean_quantile_loss", "num_windows", "q_risk_p50", "q_risk_p90")


def missing_metric(block: dict[str, Any], quantiles: tuple[float, ...]) -> str | None:
    for key in METRIC_KEYS:
        if key not in block:
            return key
    for table in ("quantile_loss", "calibration"):
        per_q = block.get(table)
        if not isinstance(per_q, dict):
            return table
        for q in quantiles:
            if f"{q:g}" not in per_q:
                return f"{table}.{q:g}"
    coverage = block.get("coverage")
    if not isinstance(coverage, dict):
        return "coverage"
    return next(
        (f"coverage.{k}" for k in ("interval", "nominal", "observed") if k not in coverage), None
    )


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def non_numeric_leaf(block: dict[str, Any]) -> str | None:
    """The first metric of a block that is not a number (a text `reason`, or `unavailable`
    saying why a baseline has no forecast, is allowed; the per-quantile tables and coverage
    hold numbers, coverage.interval two of them)."""
    for key, value in block.items():
        if key in ("reason", "unavailable") and isinstance(value, str):
            continue
        if key not in ("quantile_loss", "calibration", "coverage"):
            if not is_number(value):
                return key
            continue
        for inner, number in value.items():
            pair = isinstance(number, list) and len(number) == 2 and all(map(is_number, number))
            if not (pair if inner == "interval" else is_number(number)):
                return f"{key}.{inner}"
    return None


def non_numeric_tree(obj: Any, where: str) -> str | None:
    """The first leaf of nested objects and lists that is not a number (a text `error`, a
    baseline that could not be fitted, is allowed)."""
    if isinstance(obj, dict):
        if not obj:
            return where
        for key, value in obj.items():
            if key == "error" and isinstance(value, str):
                continue
            found = non_numeric_tree(value, f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(obj, list):
        return next((where for v in obj if not is_number(v)), None)
    return None if is_number(obj) else where


def read_history_lines(path: Path) -> list[dict[str, Any]]:
    """history.jsonl: one JSON object per line; a damaged line is named, not skipped."""
    if not path.exists():
        return []
    raw = read_bytes_bounded(path, HISTORY_LIMIT)
    records = []
    for number, line in enumerate(raw.decode(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            raise RunFileError(f"{path}: line {number} is not a JSON object; the file is damaged")
        for field in HISTORY_FIELDS.get(str(record.get("event")), ()):
            value = record.get(field)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise RunFileError(
                    f"{path}: line {number}: field {field} is missing or not a number"
                )
        records.append(record)
    return records


def fits_of(volatility: Any) -> Any:
    """A volatility state's fits, each to hold numbers: without its ``extended`` flag, and
    without the fits (empty) that a state fitted before the extended baselines lacks."""
    if not isinstance(volatility, dict):
        return volatility
    empty = EXTENDED_FITS if volatility.get("extended") is False else ()
    return {k: v for k, v in volatility.items() if k != "extended" and k not in empty}


def read_baseline_state(path: Path, *, horizon: int, quantiles: int) -> dict[str, Any]:
    """baseline.json in today's format (foxhunt/migrations.py) without it: historical
    quantiles [horizon, quantiles], finite; volatility None where none were fitted."""
    saved = read_json_bounded(path)
    try:
        saved = BASELINE.fields_of(saved) if isinstance(saved, dict) else saved
    except ConfigError as exc:
        raise RunFileError(f"{path}: {exc}") from None
    historical = saved.get("historical_quantiles") if isinstance(saved, dict) else None
    try:
        table = np.asarray(historical, dtype=np.float64)
    except (TypeError, ValueError):
        table = np.empty(0)
    if table.shape != (horizon, quantiles) or not np.isfinite(table).all():
        raise RunFileError(
            f"{path}: historical_quantiles must be {horizon} x {quantiles} finite numbers"
        )
    volatility = saved["volatility"]
    if volatility is not None:
        field = non_numeric_tree(fits_of(volatility), "volatility")
        if field is not None:
            raise RunFileError(f"{path}: {field} must be a number; the file is damaged")
        try:  # numbers, but do they make a forecast? (huge ones overflow to inf quantiles)
            FittedBaselines.from_state_dict(saved["volatility"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RunFileError(f"{path}: volatility: {exc}; the file is damaged") from None
    return {**saved, "historical_quantiles": table.tolist()}  # floats, whatever JSON held
