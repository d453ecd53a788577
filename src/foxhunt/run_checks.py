"""Every file of a run folder checked on load: one line naming the file and the field.

A run folder may have been edited, half-copied or swapped with another run's files; loading
must either rebuild exactly the saved model or refuse, never serve weights that disagree
with their config or scales that turn every forecast into NaN.
"""

from __future__ import annotations

import json
import math
import zoneinfo
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from foxhunt.baselines import FittedBaselines
from foxhunt.data import Preprocessor
from foxhunt.data.volatility import MINUTES_PER_DAY
from foxhunt.errors import FoxhuntError
from foxhunt.storage.bounded import read_bytes_bounded, read_json_bounded, regular_size

CONFIG_SECTIONS = ("data", "model", "training")
OPTIONAL_SECTIONS = ("versions",)
HEADER_SLACK = 16 << 20  # a safetensors header and alignment, generously
HISTORY_LIMIT = 256 << 20  # one line per epoch and memory event
# the numbers the report plots, per event
HISTORY_FIELDS = {
    "epoch": ("epoch", "train_loss", "val_loss"),
    "memory_step": ("step", "used_mb", "peak_mb"),
    "memory_epoch_end": ("used_mb",),
}


class RunFileError(FoxhuntError):
    """A file of a run folder is damaged, inconsistent or not what it claims to be."""


def read_config_sections(path: Path) -> dict[str, Any]:
    """config.json's data, model and training sections; unknown sections refused."""
    raw = read_json_bounded(path)
    if not isinstance(raw, dict):
        raise RunFileError(f"{path}: expected a JSON object, found {type(raw).__name__}")
    unknown = sorted(set(raw) - {*CONFIG_SECTIONS, *OPTIONAL_SECTIONS})
    if unknown:
        raise RunFileError(f"{path}: unknown section(s) {unknown}; valid: {list(CONFIG_SECTIONS)}")
    for section in CONFIG_SECTIONS:
        if not isinstance(raw.get(section), dict):
            raise RunFileError(f"{path}: section {section!r} is missing or not an object")
    return {k: raw[k] for k in CONFIG_SECTIONS}


def check_weights_file(path: Path, parameters: int) -> None:
    """Refuse, before reading it, a weights file far larger than the config's model."""
    size = regular_size(path)
    bound = parameters * 8 + HEADER_SLACK  # float64 at most, plus the header
    if size > bound:
        raise RunFileError(
            f"{path} is {size:,} bytes but config.json's model has {parameters:,} parameters "
            f"(at most {bound:,} bytes); the weights belong to another model"
        )


def check_state(path: Path, state: dict[str, torch.Tensor], model: nn.Module) -> None:
    """Names, shapes and finiteness of saved tensors against the model config.json builds."""
    expected = model.state_dict()
    for name, tensor in state.items():
        want = expected.get(name)
        if want is None:
            continue  # load_state_dict reports unexpected names with the missing ones
        if tuple(tensor.shape) != tuple(want.shape):
            raise RunFileError(
                f"{path}: tensor {name} has shape {tuple(tensor.shape)}, config.json's model "
                f"needs {tuple(want.shape)}; weights and config.json come from different runs"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise RunFileError(f"{path}: tensor {name} holds NaN or inf; the run is unusable")


def first_difference(saved: Any, rebuilt: Any, where: str = "") -> str | None:
    """The first key path where `rebuilt` differs from `saved` (types included)."""
    if isinstance(saved, dict) and isinstance(rebuilt, dict):
        for key in sorted(set(saved) | set(rebuilt), key=str):
            found = first_difference(saved.get(key), rebuilt.get(key), f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(saved, list) and isinstance(rebuilt, list) and len(saved) == len(rebuilt):
        for i, (a, b) in enumerate(zip(saved, rebuilt, strict=True)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    same_type = type(saved) is type(rebuilt) or {type(saved), type(rebuilt)} == {int, float}
    return None if same_type and saved == rebuilt else (where.lstrip(".") or "(top level)")


def check_round_trip(path: Path, saved: Any, rebuilt: Any) -> None:
    """What loading made of a file must write back the same: a field that was coerced
    (None -> "None", "5" -> 5, NaN) is a damaged field, named."""
    field = first_difference(saved, rebuilt)
    if field is not None:
        raise RunFileError(f"{path}: field {field} has a wrong type or value")


def read_preprocessor(
    path: Path, *, lookback: int | None = None, horizon: int | None = None
) -> Preprocessor:
    """preprocessor.json, with finite statistics, scales > 0 and (if given) the config's
    window."""
    state = read_json_bounded(path)
    if not isinstance(state, dict):
        raise RunFileError(f"{path}: expected a JSON object")
    try:
        pre = Preprocessor.from_state_dict(state)
        zoneinfo.ZoneInfo(pre.timezone)
    except (KeyError, TypeError, ValueError, AttributeError, zoneinfo.ZoneInfoNotFoundError) as e:
        raise RunFileError(f"{path}: field {e} is missing or has the wrong type") from None
    check_round_trip(path, state, pre.state_dict())
    scaler = pre.scaler
    mean, std = np.asarray(scaler.mean), np.asarray(scaler.std)
    if mean.shape != (len(scaler.names),) or std.shape != mean.shape:
        raise RunFileError(f"{path}: scaler.mean/std must hold one number per name")
    if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
        raise RunFileError(f"{path}: scaler.mean must be finite and scaler.std finite and > 0")
    scale = pre.target_scaler.scale
    if not (math.isfinite(scale) and scale > 0):
        raise RunFileError(f"{path}: target_scaler.scale must be finite and > 0, got {scale}")
    if lookback is not None and (pre.lookback, pre.horizon) != (lookback, horizon):
        raise RunFileError(
            f"{path}: lookback/horizon {pre.lookback}/{pre.horizon} differ from config.json's "
            f"{lookback}/{horizon}; the files come from different runs"
        )
    year_ns = 366 * 24 * 3600 * 10**9  # beyond it a time step means nothing (and int64 ends)
    gap = pre.max_gap_ns
    if not 0 < pre.bar_spacing_ns <= year_ns or (gap is not None and not 0 < gap <= 10 * year_ns):
        raise RunFileError(
            f"{path}: bar_spacing_ns must be in (0, 1 year] and max_gap_ns in (0, 10 years]"
        )
    if not pre.symbols.categories:
        raise RunFileError(f"{path}: symbols.categories is empty")
    windows = pre.spec.volatility_windows
    if not all(2 <= w <= 100_000 for w in windows):  # rolling() would overflow or refuse
        raise RunFileError(f"{path}: spec.volatility_windows must be ints in [2, 100000]")
    check_volatility_profile(path, pre)
    return pre


def check_volatility_profile(path: Path, pre: Preprocessor) -> None:
    """The baseline scale's inputs: a sane window, one positive finite value per bucket."""
    window = pre.baseline_window
    if isinstance(window, bool) or not isinstance(window, int) or not 2 <= window <= 100_000:
        raise RunFileError(f"{path}: baseline_window must be an int in [2, 100000], got {window}")
    fast = pre.fast_window
    if isinstance(fast, bool) or not isinstance(fast, int) or fast == 1 or not 0 <= fast < window:
        raise RunFileError(
            f"{path}: fast_window must be 0 or an int in [2, baseline_window = {window}), got {fast}"
        )
    if pre.profile is None:
        return
    bucket, values = pre.profile.bucket_minutes, np.asarray(pre.profile.values)
    if not 1 <= bucket <= MINUTES_PER_DAY or values.shape != (-(-MINUTES_PER_DAY // bucket),):
        raise RunFileError(
            f"{path}: profile.bucket_minutes must be in [1, 1440] with one value per bucket"
        )
    if not (np.isfinite(values).all() and (values > 0).all() and values.max() < 1e6):
        raise RunFileError(f"{path}: profile.values must be finite and in (0, 1e6)")


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
    return dict(metrics)


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
    """The first metric of a block that is not a number (a text `reason` is allowed; the
    per-quantile tables and coverage hold numbers, coverage.interval two of them)."""
    for key, value in block.items():
        if key == "reason" and isinstance(value, str):
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


def read_baseline_state(path: Path, *, horizon: int, quantiles: int) -> dict[str, Any]:
    """baseline.json: historical quantiles [horizon, quantiles], finite; volatility optional."""
    saved = read_json_bounded(path)
    historical = saved.get("historical_quantiles") if isinstance(saved, dict) else None
    try:
        table = np.asarray(historical, dtype=np.float64)
    except (TypeError, ValueError):
        table = np.empty(0)
    if table.shape != (horizon, quantiles) or not np.isfinite(table).all():
        raise RunFileError(
            f"{path}: historical_quantiles must be {horizon} x {quantiles} finite numbers"
        )
    if "volatility" in saved:
        field = non_numeric_tree(saved["volatility"], "volatility")
        if field is not None:
            raise RunFileError(f"{path}: {field} must be a number; the file is damaged")
        try:  # numbers, but do they make a forecast? (huge ones overflow to inf quantiles)
            FittedBaselines.from_state_dict(saved["volatility"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RunFileError(f"{path}: volatility: {exc}; the file is damaged") from None
    return {**saved, "historical_quantiles": table.tolist()}  # floats, whatever JSON held
