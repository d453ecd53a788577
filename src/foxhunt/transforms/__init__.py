"""Cross-cutting model transforms, each a function applied to a built model from outside.

No block's forward knows any of them. The model carries one switch
(``TFTConfig.checkpointing``) and the names of its segments (``SEGMENTS``), and its constructor
applies that switch through the checkpointing transform (implemented in
``model/checkpointing.py`` for that reason, re-exported here), so every door that builds a
model honours it. ``apply_model_transforms(model, config, qat=...)`` applies the rest where
models are built, in this order:

1. activation checkpointing (already applied by the constructor; re-applying is a no-op): it
   replaces the ``forward`` of top-level segments only, so whatever later swaps modules inside
   a segment is checkpointed with it;
2. QAT prepare (``quant/transform.py``; quant owns int8): after checkpointing, the order
   runs have always been built in (either order composes). Checkpointing runs a segment's
   forward again in backward; the observer schedule (``quant/schedule.py``) keeps the
   observers off during that recomputation, so it quantizes on the forward's grid;
3. DDP last (``wrap_ddp`` in ``training/distributed.py``, applied by the ``Trainer``): it
   registers its gradient hooks on the parameters it is given and broadcasts them, so the
   module must be final (QAT's wrappers and fake-quantized weights in place) when it wraps.

``convert`` (QAT model -> int8) runs on a trained QAT model, at export.
"""

from foxhunt.quant.transform import convert, prepare_qat
from foxhunt.transforms.checkpointing import (
    Policy,
    apply_checkpointing,
    checkpointed_segments,
    remove_checkpointing,
    resolve_policy,
)
from foxhunt.transforms.compose import apply_model_transforms

__all__ = [
    "Policy",
    "apply_checkpointing",
    "apply_model_transforms",
    "checkpointed_segments",
    "convert",
    "prepare_qat",
    "remove_checkpointing",
    "resolve_policy",
]
