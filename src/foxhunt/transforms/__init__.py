"""Cross-cutting model transforms, each a function applied to a built model from outside.

No block's forward knows any of them. Activation checkpointing is the model's own switch
(``TFTConfig.checkpointing``): one function, ``apply_checkpointing`` (``model/checkpointing.py``,
re-exported here with its helpers), applied to the switch at one call site, the last line of
the model's constructor, so every door that builds a model (``TemporalFusionTransformer(cfg)``,
``build_model``, a run folder, a resume, QAT, DDP, bench-memory) checkpoints what the config
says. It replaces the ``forward`` of top-level segments only, so whatever later swaps modules
inside a segment is checkpointed with it. The memory planner and the benchmarks call the same
function to change a built model's policy.

``apply_model_transforms(model, config, qat=...)`` applies the rest where models are built:

1. QAT prepare (``quant/transform.py``; quant owns int8), on the checkpointed model (either
   order composes). Checkpointing runs a segment's forward again in backward; the observer
   schedule (``quant/schedule.py``) keeps the observers off during that recomputation, so it
   quantizes on the forward's grid;
2. DDP last (``wrap_ddp`` in ``training/distributed.py``, applied by the ``Trainer``): it
   registers its gradient hooks on the parameters it is given and broadcasts them, so the
   module must be final (QAT's wrappers and fake-quantized weights in place) when it wraps.

``convert`` (QAT model -> int8) runs on a trained QAT model, at export.
"""

from foxhunt.model.checkpointing import (
    Policy,
    apply_checkpointing,
    checkpointed_segments,
    remove_checkpointing,
    resolve_policy,
)
from foxhunt.quant.transform import convert, prepare_qat
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
