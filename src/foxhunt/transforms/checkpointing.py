"""The checkpointing transform, as ``foxhunt.transforms`` names it.

It is implemented in :mod:`foxhunt.model.checkpointing`, below the model, because the model's
constructor applies ``TFTConfig.checkpointing`` through it (a switch that says checkpointing
checkpoints, whichever door built the model); this module keeps the transforms' import path.
"""

from foxhunt.model.checkpointing import (
    INPUT_LISTENERS,
    CheckpointedForward,
    InputsListener,
    Policy,
    apply_checkpointing,
    checkpointed_segments,
    remove_checkpointing,
    resolve_policy,
)

__all__ = [
    "INPUT_LISTENERS",
    "CheckpointedForward",
    "InputsListener",
    "Policy",
    "apply_checkpointing",
    "checkpointed_segments",
    "remove_checkpointing",
    "resolve_policy",
]
