"""Cross-cutting model transforms, each a function applied to a built model from outside.

The model knows none of them beyond one switch (``TFTConfig.checkpointing``) and the names of
its segments (``SEGMENTS``). ``apply_model_transforms(model, config, qat=...)`` applies them
where models are built, in this order:

1. activation checkpointing (``transforms/checkpointing.py``): it replaces the ``forward`` of
   top-level segments only, so whatever later swaps modules inside a segment is checkpointed
   with it;
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
