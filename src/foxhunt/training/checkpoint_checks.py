"""Whether a checkpoint belongs to this run: its identity and its config against ours.

A resume refuses a checkpoint of another run (its identity) or of another configuration
(any field but `RESUMABLE_CHANGES`); `runs/identity.py` fingerprints a run with the same
flattening.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foxhunt.errors import FoxhuntError
from foxhunt.migrations import FORMAT_KEY, sections_of

# Fields that may change when resuming; any other difference means a different run.
RESUMABLE_CHANGES = frozenset(
    {"training.epochs", "training.patience", "training.device", "training.num_workers"}
    | {"training.eval_batch_size", "training.threads"}
    # where prepared inputs are kept: the windows are the same bit for bit
    | {"data.feature_store"}
)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = list(value) if isinstance(value, tuple) else value
    return out


def config_differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    saved = sections_of(saved)  # a checkpoint of an earlier format reads as it was made
    current = {k: v for k, v in current.items() if k != FORMAT_KEY}  # a checkpoint's own
    a, b = flatten(saved), flatten(current)
    return [
        f"{k}: checkpoint has {a.get(k)!r}, this run has {b.get(k)!r}"
        for k in sorted(set(a) | set(b))
        if k not in RESUMABLE_CHANGES and a.get(k) != b.get(k)
    ]


def check_same_run(saved: dict[str, Any] | None, ours: dict[str, Any], where: str) -> None:
    """A checkpoint's identity against this run's (None: written before identities)."""
    if saved is None:
        return
    if saved.get("run_id") != ours.get("run_id"):
        raise FoxhuntError(
            f"{where} belongs to run {saved.get('run_id')}, not to this run "
            f"({ours.get('run_id')}); checkpoints are never resumed across runs: give each "
            "run its own --checkpoint-storage"
        )
    if saved.get("data") != ours.get("data"):
        raise FoxhuntError(f"{where} was trained on other data than this run's; not resumed")
