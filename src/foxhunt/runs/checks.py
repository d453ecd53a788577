"""Every file of a run folder checked on load: one line naming the file and the field.

A run folder may have been edited, half-copied or swapped with another run's files; loading
must either rebuild exactly the saved model or refuse, never serve weights that disagree
with their config or scales that turn every forecast into NaN.
"""

from __future__ import annotations

import math
import zoneinfo
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from foxhunt.data import DataConfig, Preprocessor
from foxhunt.data.features import FeatureSpec, parse_groups
from foxhunt.data.fit import first_incompatible
from foxhunt.data.volatility import MINUTES_PER_DAY
from foxhunt.errors import FoxhuntError
from foxhunt.migrations import PREPROCESSOR
from foxhunt.storage.bounded import read_json_bounded, regular_size

CONFIG_SECTIONS = ("data", "model", "training")
OPTIONAL_SECTIONS = ("model_class", "versions", "format")
HEADER_SLACK = 16 << 20  # a safetensors header and alignment, generously


class RunFileError(FoxhuntError):
    """A file of a run folder is damaged, inconsistent or not what it claims to be."""


def read_config_sections(path: Path) -> dict[str, Any]:
    """config.json's data, model and training sections, its model class (if named) and
    format (foxhunt/migrations.py; absent in format 0); unknown sections refused."""
    raw = read_json_bounded(path)
    if not isinstance(raw, dict):
        raise RunFileError(f"{path}: expected a JSON object, found {type(raw).__name__}")
    unknown = sorted(set(raw) - {*CONFIG_SECTIONS, *OPTIONAL_SECTIONS})
    if unknown:
        raise RunFileError(f"{path}: unknown section(s) {unknown}; valid: {list(CONFIG_SECTIONS)}")
    for section in CONFIG_SECTIONS:
        if not isinstance(raw.get(section), dict):
            raise RunFileError(f"{path}: section {section!r} is missing or not an object")
    if "model_class" in raw and not isinstance(raw["model_class"], str):
        raise RunFileError(f'{path}: model_class must be a name such as "tft"')
    return {k: raw[k] for k in (*CONFIG_SECTIONS, "model_class", "format") if k in raw}


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
    saved = read_json_bounded(path)
    if not isinstance(saved, dict):
        raise RunFileError(f"{path}: expected a JSON object")
    try:  # an earlier version is migrated to today's first (foxhunt/migrations.py)
        state = PREPROCESSOR.migrated(saved)
        pre = Preprocessor.from_state_dict(state)
        zoneinfo.ZoneInfo(pre.timezone)
    except FoxhuntError as e:  # a field's value refused (an unknown calendar)
        raise RunFileError(f"{path}: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError, zoneinfo.ZoneInfoNotFoundError) as e:
        raise RunFileError(f"{path}: field {e} is missing or has the wrong type") from None
    check_round_trip(path, state, pre.state_dict())  # a field older files lack is filled in
    scaler = pre.scaler
    mean, std = np.asarray(scaler.mean), np.asarray(scaler.std)
    symbols = (
        pre.symbols.cardinality
    )  # one set per symbol, or one shared (one symbol; runs before per-symbol sets)
    if mean.shape not in ((len(scaler.names),), (symbols, len(scaler.names))):
        raise RunFileError(f"{path}: scaler.mean/std must hold one number per name")
    if std.shape != mean.shape:
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
    computed = (*pre.spec.observed_names, *pre.spec.known_names)
    if not all(isinstance(name, str) for name in pre.scaler.names):
        raise RunFileError(f"{path}: scaler.names must be the inputs' names (strings)")
    if tuple(pre.scaler.names) != computed:  # a group gained an input since (cross_fresh)
        extra = sorted(set(computed) ^ set(pre.scaler.names)) or "their order"
        raise RunFileError(
            f"{path}: the scaler's inputs differ from those its spec computes now ({extra}); "
            "the run was saved by an older feature library: retrain it"
        )
    return pre


def check_same_run(run_dir: Path, data: DataConfig, pre: Preprocessor) -> None:
    """config.json's data section, preprocessor.json and metrics.json's base describe one run
    (issue 42: a hand-edited base in preprocessor.json changed the forecasts while config.json
    and metrics.json named another; edits to config.json's feature_groups or base were
    ignored). Refused with one line naming both files and both values."""
    config_path, pre_path = run_dir / "config.json", run_dir / "preprocessor.json"
    spec = FeatureSpec(
        data.volatility_windows,
        data.observed_columns,
        data.known_columns,
        groups=parse_groups(data.feature_groups),
    )
    try:
        found = first_incompatible(pre, data, spec)
    except FoxhuntError as exc:  # a config value the check cannot read (a bad max_gap)
        raise RunFileError(f"{config_path}: {exc}") from None
    base = metrics_base(run_dir / "metrics.json")
    # a served fallback head (jobs/fallback.py): the base set is the one the network trained on
    trained_on = base.get("trained_on") if base is not None else None
    if found is None and data.base not in ("auto", pre.base, trained_on):
        found = ("base", pre.base)
    if found is not None:
        name, saved = found
        raise RunFileError(
            f"{config_path} has data.{name} = {getattr(data, name)!r} but {pre_path} was made "
            f"with {saved!r}: one of them was edited or comes from another run; restore it "
            "(a run's settings are changed by training again)"
        )
    chosen = base.get("name") if base is not None else None
    if chosen is not None and chosen != pre.base:
        raise RunFileError(
            f"{run_dir / 'metrics.json'} has base.name = {chosen!r} but {pre_path} has base = "
            f"{pre.base!r}: one of them was edited or comes from another run; restore it"
        )


def metrics_base(path: Path) -> dict[str, Any] | None:
    """metrics.json's `base` record (the base chosen, served, trained on), if it has one."""
    if not path.is_file():
        return None
    record = read_json_bounded(path)
    base = record.get("base") if isinstance(record, dict) else None
    return base if isinstance(base, dict) else None


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
    size = -(-MINUTES_PER_DAY // bucket)  # one curve, or one per symbol
    shapes = ((size,), (pre.symbols.cardinality, size))
    if not 1 <= bucket <= MINUTES_PER_DAY or values.shape not in shapes:
        raise RunFileError(
            f"{path}: profile.bucket_minutes must be in [1, 1440] with one value per bucket"
        )
    if not (np.isfinite(values).all() and (values > 0).all() and values.max() < 1e6):
        raise RunFileError(f"{path}: profile.values must be finite and in (0, 1e6)")
